package remote

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
)

// The handoff is how the runner container gives its result to the reporter
// container, the only one holding the run's token: a unix stream socket the
// reporter listens on, in a directory (an emptyDir) the two containers
// share. The reporter accepts exactly one connection and closes its
// listener (which removes the socket file); the runner makes that
// connection before it starts any process (git, Terraform, providers), so
// no process of the run can connect first, and none can connect later.
// Over the connection go length-prefixed JSON frames: the run's log as it
// is written (unanswered), the runner's proceed checks (a remediation asks
// the daemon, through the reporter, right before its apply) and finally
// its result; the reporter answers each but the log.

// maxFrameBytes bounds one frame: a result as large as the Receiver takes,
// plus its envelope.
const maxFrameBytes = DefaultMaxBodyBytes + 64<<10

// Frame kinds.
const (
	frameProceed  = "proceed"        // runner → reporter: may the apply proceed?
	frameAnswer   = "proceed_answer" // reporter → runner: Refusal, or none to proceed
	frameLog      = "log"            // runner → reporter: lines of the run's log (no answer)
	frameResult   = "result"         // runner → reporter: the run's result, last
	frameReceived = "received"       // reporter → runner: the result is taken over
	frameError    = "error"          // reporter → runner: the request is refused (Error)
)

type frame struct {
	Kind    string          `json:"kind"`
	Result  *Result         `json:"result,omitempty"`
	Refusal *engine.Refusal `json:"refusal,omitempty"`
	Error   string          `json:"error,omitempty"`
	Lines   []string        `json:"lines,omitempty"`
}

func writeFrame(w io.Writer, f frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode %s: %w", f.Kind, err)
	}
	if len(b) > maxFrameBytes {
		return fmt.Errorf("%s is %d bytes, more than %d", f.Kind, len(b), maxFrameBytes)
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// readFrame reads one frame; io.EOF means the peer closed the connection
// between frames.
func readFrame(r io.Reader) (frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrameBytes {
		return frame{}, fmt.Errorf("frame of %d bytes, more than %d", n, maxFrameBytes)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return frame{}, fmt.Errorf("read frame: %w", io.ErrUnexpectedEOF)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return frame{}, fmt.Errorf("decode frame: %w", err)
	}
	return f, nil
}

// deadlineConn bounds the next exchange on conn by d and by ctx; the
// returned func lifts that bound.
func deadlineConn(ctx context.Context, conn net.Conn, d time.Duration) func() {
	t := time.Now().Add(d)
	if dl, ok := ctx.Deadline(); ok && dl.Before(t) {
		t = dl
	}
	_ = conn.SetDeadline(t)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	return func() {
		stop()
		_ = conn.SetDeadline(time.Time{})
	}
}

// listenHandoff listens on the unix socket at path for the runner.
func listenHandoff(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The runner container runs as another user: let it connect. Only the
	// two containers see the directory, and only one connection is ever
	// accepted, the runner's, made before any process of the run exists.
	if err := os.Chmod(path, 0o666); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

// acceptOne accepts exactly one connection on ln and closes ln (which
// removes the socket file): any later connection is refused.
func acceptOne(ctx context.Context, ln *net.UnixListener) (*net.UnixConn, error) {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	conn, err := ln.AcceptUnix()
	_ = ln.Close()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no connection from the runner: %w", context.Cause(ctx))
		}
		return nil, err
	}
	return conn, nil
}

// handoff is the runner's end of the connection to the reporter.
type handoff struct {
	mu   sync.Mutex
	conn *net.UnixConn
	// proceedWait bounds a proceed check's answer (the reporter asks the
	// daemon, retrying for about half a minute).
	proceedWait time.Duration
}

// dialHandoff connects to the reporter's socket, trying again until it
// answers or ctx ends (the reporter container may start after this one).
func dialHandoff(ctx context.Context, path string) (*handoff, error) {
	wait := 50 * time.Millisecond
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			conn := c.(*net.UnixConn)
			// Go opens every descriptor close-on-exec; make sure of it, since
			// a child holding this one could write a result of its own.
			if err := closeOnExec(conn); err != nil {
				_ = conn.Close()
				return nil, err
			}
			return &handoff{conn: conn, proceedWait: 3 * time.Minute}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %w)", context.Cause(ctx), err)
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		}
	}
}

// roundTrip sends req and reads the answer within d (and ctx).
func (h *handoff) roundTrip(ctx context.Context, req frame, d time.Duration) (frame, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer deadlineConn(ctx, h.conn, d)()
	if err := writeFrame(h.conn, req); err != nil {
		return frame{}, fmt.Errorf("send %s: %w", req.Kind, err)
	}
	ans, err := readFrame(h.conn)
	if errors.Is(err, io.EOF) {
		err = errors.New("the reporter closed the connection")
	}
	if err != nil {
		return frame{}, err
	}
	if ans.Kind == frameError {
		return frame{}, fmt.Errorf("the reporter refused the %s: %s", req.Kind, ans.Error)
	}
	return ans, nil
}

// send writes f, unanswered, within d (and ctx).
func (h *handoff) send(ctx context.Context, f frame, d time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer deadlineConn(ctx, h.conn, d)()
	return writeFrame(h.conn, f)
}

// proceed asks the daemon, through the reporter, whether the apply may
// proceed: nil to proceed; fails closed like Checker.Check.
func (h *handoff) proceed(ctx context.Context) *engine.Refusal {
	ans, err := h.roundTrip(ctx, frame{Kind: frameProceed}, h.proceedWait)
	if err == nil && ans.Kind != frameAnswer {
		err = fmt.Errorf("unexpected answer %q to a proceed check", ans.Kind)
	}
	if err != nil {
		return &engine.Refusal{Code: engine.CodeDaemonUnreachable, Reason: fmt.Sprintf(
			"could not ask the daemon, through the reporter container, whether remediation is paused: %v: nothing applied", err)}
	}
	return ans.Refusal
}

// deliver hands res over and waits for the reporter to take it.
func (h *handoff) deliver(ctx context.Context, res Result) error {
	ans, err := h.roundTrip(ctx, frame{Kind: frameResult, Result: &res}, time.Minute)
	if err != nil {
		return err
	}
	if ans.Kind != frameReceived {
		return fmt.Errorf("unexpected answer %q to the result", ans.Kind)
	}
	return nil
}

func (h *handoff) close() { _ = h.conn.Close() }
