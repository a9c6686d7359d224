// Package s3test runs a real S3-compatible object store for tests: SeaweedFS's
// `weed server -s3`, built by `make s3-tools` (hack/provision-s3.sh) and
// named by DRIFTWATCH_WEED. It listens on 127.0.0.1 only, on free ports,
// keeps its data in a temporary directory, accepts only the credentials it
// was started with (an identities file), and is stopped, by its PID, when
// the test ends. A small SigV4 client (Put, Get, Head, Delete) lets a test
// look at or plant objects (a state file, a Terraform lock file) the way
// any other S3 client would.
//
// Under `make test` (DRIFTWATCH_E2E=1) a missing binary fails the test; a
// plain `go test` without it skips. Only tests import it.
package s3test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/backend/sigv4"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// Region is the region the server answers for (any region is accepted;
// this is the one requests are signed with).
const Region = "us-east-1"

// Weed returns the weed binary (DRIFTWATCH_WEED).
func Weed(t testing.TB) string {
	t.Helper()
	tftest.Short(t, "SeaweedFS")
	p := os.Getenv("DRIFTWATCH_WEED")
	if p == "" {
		tftest.Unavailable(t, "SeaweedFS not provisioned (DRIFTWATCH_WEED); run `make s3-tools` or `make test`")
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		tftest.Unavailable(t, fmt.Sprintf("DRIFTWATCH_WEED=%s is not an executable file; run `make s3-tools`", p))
	}
	return p
}

// Options are Start's. Empty fields get random values.
type Options struct {
	Bucket    string
	AccessKey string
	SecretKey string
}

// Server is a running object store with one bucket.
type Server struct {
	// Endpoint is the S3 endpoint, http://127.0.0.1:PORT.
	Endpoint  string
	Bucket    string
	AccessKey string
	SecretKey string

	client *http.Client
	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{}
}

// Start starts weed on free 127.0.0.1 ports, waits until it accepts a
// write, creates the bucket, and registers its stop (SIGTERM, then SIGKILL
// after 3s, by PID) with t.Cleanup.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	weed := Weed(t)
	if o.Bucket == "" {
		o.Bucket = "tfstate-" + strings.ToLower(randomString(t, 8))
	}
	if o.AccessKey == "" {
		o.AccessKey = "AK" + randomString(t, 18)
	}
	if o.SecretKey == "" {
		o.SecretKey = randomString(t, 40)
	}
	// A short directory of our own: weed puts unix sockets in it, and a
	// socket path is limited to 108 bytes (t.TempDir's can be longer).
	dir, err := os.MkdirTemp("", "s3test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	identities := map[string]any{"identities": []any{map[string]any{
		"name":        "driftwatch-test",
		"credentials": []any{map[string]string{"accessKey": o.AccessKey, "secretKey": o.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	cfg, err := json.Marshal(identities)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	// A port chosen free may be taken before weed binds it (by another
	// test's server): weed then exits at once, and is started again on
	// other ports, with a data directory of its own.
	for attempt := 1; ; attempt++ {
		data := filepath.Join(dir, "data"+strconv.Itoa(attempt))
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		s, retry := launch(t, weed, dir, data, cfgFile, o)
		if !retry {
			return s
		}
		if attempt == 3 {
			t.Fatalf("weed could not bind its ports in 3 attempts:\n%s", tail(s.logs.String(), 20))
		}
		t.Logf("weed lost a port to another process; starting it again on other ports")
	}
}

// launch starts weed once, on ports chosen now, and waits until it is
// ready; retry says it exited because a port was taken meanwhile (it is
// then stopped, its logs in s).
func launch(t testing.TB, weed, dir, data, cfgFile string, o Options) (s *Server, retry bool) {
	t.Helper()
	p := freePorts(t, 8)
	args := []string{"server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		// Volumes are sparse files of at most 64 MB. 16 slots: the
		// default collection (the filer's own files) may take several
		// before the bucket's collection asks for its first, and a bucket
		// with no free slot refuses every write. A fixed 256 MiB floor of
		// free disk instead of weed's 1%: on a full build machine 1% of a
		// large disk turns every volume read-only.
		"-dir=" + data, "-volume.max=16", "-volume.minFreeSpace=256MiB", "-master.volumeSizeLimitMB=64",
		"-master.telemetry=false",
		"-master.port=" + p[0], "-master.port.grpc=" + p[1],
		"-volume.port=" + p[2], "-volume.port.grpc=" + p[3], "-volume.preStopSeconds=0",
		"-filer.port=" + p[4], "-filer.port.grpc=" + p[5],
		"-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3", "-s3.port=" + p[6], "-s3.port.grpc=" + p[7],
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.localSocket=" + filepath.Join(dir, "s3.sock"),
		"-s3.config=" + cfgFile,
	}
	s = &Server{
		Endpoint: "http://127.0.0.1:" + p[6], Bucket: o.Bucket, AccessKey: o.AccessKey, SecretKey: o.SecretKey,
		client: &http.Client{Timeout: 10 * time.Second},
		logs:   &logBuffer{}, exited: make(chan struct{}),
	}
	s.cmd = exec.Command(weed, args...)
	s.cmd.Dir = dir
	s.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	// Its own process group (a ^C to the test is the test's), and killed
	// with the test binary should that die first.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start weed: %v", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("weed logs (tail):\n%s", tail(s.logs.String(), 60))
		}
	})

	// Ready: the bucket is created and an object can be written, read
	// and deleted (the volume server has registered with the master).
	started := time.Now()
	deadline := started.Add(90 * time.Second)
	var last string
	for {
		select {
		case <-s.exited:
			if strings.Contains(s.logs.String(), "address already in use") {
				return s, true
			}
			t.Fatalf("weed exited while starting:\n%s", tail(s.logs.String(), 60))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("weed not ready within 90s (last: %s):\n%s", last, tail(s.logs.String(), 60))
		}
		last = s.ready()
		if last == "" {
			t.Logf("weed ready on %s after %s", s.Endpoint, time.Since(started).Round(100*time.Millisecond))
			return s, false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ready returns "" once the bucket exists and takes a write, else why not.
func (s *Server) ready() string {
	code, body, err := s.Do(http.MethodPut, "", nil, nil)
	if err != nil {
		return err.Error()
	}
	if code != http.StatusOK && !strings.Contains(string(body), "BucketAlreadyOwnedByYou") && !strings.Contains(string(body), "BucketAlreadyExists") {
		return fmt.Sprintf("create bucket: %d %s", code, body)
	}
	const probe = ".s3test-ready"
	if code, body, err = s.Do(http.MethodPut, probe, []byte("ok"), nil); err != nil || code != http.StatusOK {
		return fmt.Sprintf("put probe: %d %s %v", code, body, err)
	}
	if code, body, err = s.Do(http.MethodGet, probe, nil, nil); err != nil || code != http.StatusOK || string(body) != "ok" {
		return fmt.Sprintf("get probe: %d %s %v", code, body, err)
	}
	if code, body, err = s.Do(http.MethodDelete, probe, nil, nil); err != nil || code != http.StatusNoContent {
		return fmt.Sprintf("delete probe: %d %s %v", code, body, err)
	}
	return ""
}

// stop ends weed by its PID: SIGTERM, then SIGKILL after 3s (its graceful
// stop takes ~15s, its filer retrying the volume server it stopped first;
// a test's data need not survive).
func (s *Server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(3 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Logs returns weed's output so far.
func (s *Server) Logs() string { return s.logs.String() }

// Put writes key with body; hdr adds request headers (If-None-Match, say).
// It returns the status code.
func (s *Server) Put(t testing.TB, key string, body []byte, hdr http.Header) int {
	t.Helper()
	code, _, err := s.Do(http.MethodPut, key, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// Get reads key: its body, and whether it exists (fails the test on any
// other answer).
func (s *Server) Get(t testing.TB, key string) ([]byte, bool) {
	t.Helper()
	code, body, err := s.Do(http.MethodGet, key, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch code {
	case http.StatusOK:
		return body, true
	case http.StatusNotFound:
		return nil, false
	}
	t.Fatalf("GET %s: %d %s", key, code, body)
	return nil, false
}

// Delete removes key.
func (s *Server) Delete(t testing.TB, key string) {
	t.Helper()
	code, body, err := s.Do(http.MethodDelete, key, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("DELETE %s: %d %s", key, code, body)
	}
}

// Do sends one SigV4-signed request for key in the bucket (key "": the
// bucket itself), path-style, and returns the status and body.
func (s *Server) Do(method, key string, body []byte, hdr http.Header) (int, []byte, error) {
	path := "/" + s.Bucket
	if key != "" {
		path += "/" + key
	}
	req, err := http.NewRequest(method, s.Endpoint+sigv4.URIEncode(path), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	sigv4.Sign(req, body, sigv4.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}, Region, "s3", time.Now().UTC())
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Ports are chosen in [portFloor, portFloor+portSpan): below Linux's
// ephemeral range (32768 and up by default), so no outgoing connection,
// and no listener on port 0, can take one between its choice and weed's
// bind; only another explicit choice can, which launch survives.
const portFloor, portSpan = 20000, 12000

// freePorts returns n distinct TCP ports free on 127.0.0.1, all held open
// until every one is chosen.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries == 1000 {
			t.Fatalf("no %d free ports in [%d, %d)", n, portFloor, portFloor+portSpan)
		}
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(portFloor + (int(b[0])<<8|int(b[1]))%portSpan)
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			continue // taken, or chosen already
		}
		ls = append(ls, l)
		out = append(out, port)
	}
	return out
}

func randomString(t testing.TB, n int) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Cap what is kept: weed can be chatty over a long test.
	if l.b.Len() < 8<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
