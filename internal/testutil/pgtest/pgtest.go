// Package pgtest runs a real PostgreSQL server for tests: Debian's
// postgresql package, whose bin directory (initdb, postgres) is named by
// DRIFTWATCH_PG_BIN_DIR (`make test` provisions it: hack/provision-pg.sh).
// One cluster per test binary: initdb in a temporary directory, the
// postmaster listening on a Unix socket in that directory only (no TCP),
// trust authentication, no fsync; it is started by the first test that
// asks, and stopped by its PID when the binary's tests end (Main). Each
// test gets a fresh, empty database (Database).
//
// A test that needs the server to see TCP connections (its clients in
// other network namespaces, TCP keepalives that only a TCP session
// honours) starts a cluster of its own with StartTCP: the same, also
// listening at an address of this machine and trusting the clients of
// that address's network, stopped by its PID when the test ends.
//
// initdb and postgres refuse to run as root: as root, the cluster runs as
// the user nobody, and its directory belongs to nobody.
//
// Under `make test` (DRIFTWATCH_E2E=1) a missing server fails the test; a
// plain `go test` without it skips, and -short skips always. Only tests
// import it.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// EnvBinDir names the directory holding initdb and postgres.
const EnvBinDir = "DRIFTWATCH_PG_BIN_DIR"

// nobody is the uid and gid the cluster runs as when the tests run as root.
const nobody = 65534

// cluster is one server: the test binary's shared one, or a test's own
// (StartTCP).
type cluster struct {
	dir  string // owns the data directory and the socket
	port int    // the socket's (and TCP's) port
	cmd  *exec.Cmd
	done chan struct{} // closed when the postmaster has exited
	err  error         // why it could not start
}

var (
	mu      sync.Mutex
	running *cluster
	dbSeq   atomic.Int64
)

// BinDir returns DRIFTWATCH_PG_BIN_DIR, skipping (or failing under `make
// test`) when it is unset or holds no initdb, and under -short.
func BinDir(t testing.TB) string {
	t.Helper()
	tftest.Short(t, "PostgreSQL")
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		tftest.Unavailable(t, "PostgreSQL not provisioned ("+EnvBinDir+"); run `make pg-tools` or `make test`")
	}
	for _, name := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			tftest.Unavailable(t, fmt.Sprintf("%s=%s holds no executable %s; run `make pg-tools`", EnvBinDir, dir, name))
		}
	}
	return dir
}

// Main runs the tests and then stops the cluster, if one was started: a
// package using Database calls it from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if err := Stop(); err != nil && code == 0 {
		code = 1
	}
	return code
}

// Stop stops the cluster, if one was started (Main does, after the
// tests); a TestMain with its own runner calls it after the tests.
func Stop() error {
	mu.Lock()
	defer mu.Unlock()
	if running == nil {
		return nil
	}
	err := running.stop()
	running = nil
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
	}
	return err
}

// Database creates a fresh, empty database on the cluster (starting the
// cluster first if needed) and returns its DSN, in key=value form. The
// database is left to the cluster's removal.
func Database(t testing.TB) string {
	t.Helper()
	return start(t).database(t)
}

func (c *cluster) database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	db, err := sql.Open("pgx", c.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// template0: nothing anyone added to template1 leaks in.
	if _, err := db.ExecContext(ctx, `CREATE DATABASE "`+name+`" TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return c.dsn(name)
}

// Dir is the cluster's directory (the socket's and the data's), for a test
// that plants a DSN file beside it or looks at the server's log.
func Dir(t testing.TB) string {
	t.Helper()
	return start(t).dir
}

func (c *cluster) dsn(dbname string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", c.dir, c.port, dbname)
}

// TCPServer is a cluster of one test's own that also listens on TCP
// (StartTCP).
type TCPServer struct {
	c    *cluster
	Addr string // the TCP listener's host:port
}

// StartTCP starts a cluster for this test alone that listens on TCP at
// the address of cidr (an address of this machine with its network's
// prefix length, "10.1.2.1/24") on a free port, besides its Unix socket,
// and trusts every client from that network (pg_hba host ... trust: the
// socket's authentication). It is stopped by its PID when the test ends.
func StartTCP(t testing.TB, cidr string) *TCPServer {
	t.Helper()
	bin := BinDir(t)
	ip, network, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// A port free at ip now; postgres binds it a moment later.
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	c := newCluster(bin, port, &tcpListen{ip: ip.String(), hba: "host all all " + network.String() + " trust\n"})
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	if c.err != nil {
		t.Fatalf("pgtest: %v", c.err)
	}
	return &TCPServer{c: c, Addr: net.JoinHostPort(ip.String(), strconv.Itoa(port))}
}

// Database creates a fresh, empty database on s and returns its DSN on
// the Unix socket, in key=value form (a client over TCP names
// s.Addr and the DSN's dbname).
func (s *TCPServer) Database(t testing.TB) string {
	t.Helper()
	return s.c.database(t)
}

// tcpListen is what a StartTCP cluster adds: the address it listens at
// and the pg_hba.conf line that lets its clients in.
type tcpListen struct{ ip, hba string }

// start returns the running cluster, starting it once. A cluster that
// failed to start fails every test that asks.
func start(t testing.TB) *cluster {
	t.Helper()
	bin := BinDir(t)
	mu.Lock()
	defer mu.Unlock()
	if running == nil {
		running = newCluster(bin, 5432, nil)
	}
	if running.err != nil {
		t.Fatalf("pgtest: %v", running.err)
	}
	return running
}

// newCluster starts a cluster on port, on its Unix socket only unless
// tcp is set.
func newCluster(bin string, port int, tcp *tcpListen) *cluster {
	c := &cluster{port: port, done: make(chan struct{})}
	// Short: the socket's path (dir/.s.PGSQL.5432) must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		c.err = err
		return c
	}
	c.dir = dir
	cred := credential()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			c.err = err
			return c
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		c.err = fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
		return c
	}
	listen := ""
	if tcp != nil {
		listen = tcp.ip
		if err := appendFile(filepath.Join(data, "pg_hba.conf"), tcp.hba); err != nil {
			c.err = err
			return c
		}
	}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		c.err = err
		return c
	}
	defer logFile.Close()
	// Durability is not under test here: fsync off makes each CREATE
	// DATABASE and commit cheap.
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-p", strconv.Itoa(port), "-c", "listen_addresses="+listen,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB")
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	c.cmd.Dir = dir
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	if err := c.cmd.Start(); err != nil {
		c.err = fmt.Errorf("start postgres: %w", err)
		return c
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	if err := c.waitReady(30 * time.Second); err != nil {
		_ = c.stop()
		c.err = err
	}
	return c
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// credential is nobody's when running as root (initdb refuses root), else
// nil: the current user.
func credential() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: nobody, Gid: nobody}
}

func (c *cluster) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited at startup: %s", c.logTail())
		default:
		}
		db, err := sql.Open("pgx", c.dsn("postgres"))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = db.PingContext(ctx)
			cancel()
			_ = db.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("postgres not ready after %s: %w; %s", limit, last, c.logTail())
}

func (c *cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// stop ends the postmaster by its PID (SIGINT: fast shutdown, which ends
// every client's session), SIGKILL to its process group after 10 s, and
// removes the directory.
func (c *cluster) stop() error {
	var errs []error
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			errs = append(errs, errors.New("postgres ignored SIGINT for 10s; killed"))
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}
