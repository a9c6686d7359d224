package attribution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

const (
	// DefaultTimeout bounds a Command whose Timeout is zero.
	DefaultTimeout = 30 * time.Second
	// MaxAnswerSize bounds what a command may print on stdout; a longer
	// answer is refused and the command killed.
	MaxAnswerSize = 64 << 10
	// stderrTail is how much of the end of stderr a failure's error keeps.
	stderrTail = 1024
	// readGrace is how long the pipes are read after the process group
	// was killed: a process that left the group may hold them open.
	readGrace = 2 * time.Second
	// minSecretLen is the shortest env value redacted from errors: a
	// shorter one cannot be told from ordinary words of a message.
	minSecretLen = 4
	redacted     = "[REDACTED]"
)

// Limits of an answer's fields, in bytes.
const (
	MaxActor   = 256
	MaxSource  = 64
	MaxEventID = 256
	MaxURL     = 2048
)

// ErrTimeout is wrapped by the error of a command killed at its Timeout.
var ErrTimeout = errors.New("timed out")

// Window is when a change happened: after From (the last clean check)
// and no later than To (the first check that saw it).
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Query is what a command is asked, written as JSON on its stdin.
type Query struct {
	Workspace string `json:"workspace"`
	Address   string `json:"address"`
	Type      string `json:"type"`
	// Provider is the provider's source address, e.g.
	// registry.terraform.io/hashicorp/aws.
	Provider string `json:"provider,omitempty"`
	// IDs are the identifying attributes present in the state (see IDs).
	IDs    map[string]string `json:"ids"`
	Window Window            `json:"window"`
}

// Answer is a command's answer: who changed the resource, when, and where
// that is recorded. Only Actor is required.
type Answer struct {
	Actor   string    `json:"actor"`
	Time    time.Time `json:"time,omitzero"`
	Source  string    `json:"source,omitempty"`
	EventID string    `json:"event_id,omitempty"`
	URL     string    `json:"url,omitempty"`
}

// Command is a program that answers a Query. It runs outside Terraform's
// jail, as the daemon's user, in a process group of its own.
type Command struct {
	// Argv is the program and its arguments; Argv[0] is looked up in
	// PATH unless it holds a slash.
	Argv []string
	// Env is the program's environment beyond PATH (the daemon's) and
	// HOME (a private temporary directory, removed afterwards): nothing
	// else is inherited. Env may replace PATH and HOME. Its values never
	// appear in Ask's errors.
	Env map[string]string
	// Timeout bounds the run; zero means DefaultTimeout.
	Timeout time.Duration
	// Dir is the working directory; "" means the private HOME.
	Dir string
}

// Ask runs c with q as JSON on its stdin and returns its answer, read
// from stdout and checked strictly (see Answer's limits). At c.Timeout or
// when ctx ends the whole process group is killed; it is also killed when
// the program exits, so nothing it started in its group outlives Ask. A
// program that put itself in a new session escapes that kill.
//
// Errors name argv[0] and what was wrong (exit status with the end of
// stderr, timeout, an answer that is not valid), with every Env value of
// at least four bytes replaced by [REDACTED].
func (c Command) Ask(ctx context.Context, q Query) (Answer, error) {
	a, err := c.ask(ctx, q)
	if err != nil {
		return Answer{}, c.wrap(err)
	}
	return a, nil
}

func (c Command) ask(ctx context.Context, q Query) (Answer, error) {
	if err := c.check(); err != nil {
		return Answer{}, err
	}
	input, err := json.Marshal(q)
	if err != nil {
		return Answer{}, fmt.Errorf("query: %w", err)
	}
	home, err := os.MkdirTemp("", "driftwatch-attribution-")
	if err != nil {
		return Answer{}, fmt.Errorf("home: %w", err)
	}
	defer os.RemoveAll(home)
	out, err := c.run(ctx, home, input)
	if err != nil {
		return Answer{}, err
	}
	return parseAnswer(out)
}

// check refuses a Command that cannot be run as written.
func (c Command) check() error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("argv is empty")
	}
	if c.Timeout < 0 {
		return errors.New("timeout is negative")
	}
	for _, a := range c.Argv {
		if strings.ContainsRune(a, 0) {
			return errors.New("an argument contains a NUL byte")
		}
	}
	for k, v := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env name %q is not valid", k)
		}
	}
	return nil
}

// env is the program's whole environment.
func (c Command) env(home string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	vars := map[string]string{"PATH": path, "HOME": home}
	for k, v := range c.Env {
		vars[k] = v
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// run starts the program and returns its stdout. Its pipes are plain
// files, so Wait never waits on a copy: the program's exit is seen at
// once, and its process group is killed before the pipes are drained.
func (c Command) run(ctx context.Context, home string, input []byte) ([]byte, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w after %s", ErrTimeout, timeout))
	defer cancel()

	var files []*os.File // every pipe end still open in this process
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}

	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Env = c.env(home)
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = home
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// A group of its own, killed whole; and killed with the daemon.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, startError(err)
	}
	pgid := cmd.Process.Pid
	// The child holds its own copies; ours would keep the pipes open.
	for _, f := range []*os.File{inR, outW, errW} {
		_ = f.Close()
	}

	go func() {
		// A program that does not read its stdin gets EPIPE here, ignored.
		_, _ = inW.Write(input)
		_ = inW.Close()
	}()
	tooBig := make(chan struct{})
	stdout := make(chan []byte, 1)
	go func() { stdout <- readBounded(outR, MaxAnswerSize, tooBig) }()
	stderr := make(chan []byte, 1)
	go func() { stderr <- readTail(errR, stderrTail) }()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var (
		waitErr error
		stopped error // why the group was killed before the program exited
	)
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
		stopped = context.Cause(ctx)
	case <-tooBig:
		stopped = fmt.Errorf("answer is longer than %d bytes", MaxAnswerSize)
	}
	killGroup(pgid)
	if stopped != nil {
		waitErr = <-exited
	}
	out, errTail := drain(stdout, stderr, outR, errR)

	if stopped == nil && ctx.Err() == nil && len(out) > MaxAnswerSize {
		stopped = fmt.Errorf("answer is longer than %d bytes", MaxAnswerSize)
	}
	switch {
	case stopped != nil:
		return nil, withStderr(stopped, errTail)
	case waitErr != nil:
		return nil, withStderr(waitErr, errTail)
	}
	return out, nil
}

// drain collects what the readers got, closing the pipes if a process
// outside the killed group still holds them after readGrace.
func drain(stdout, stderr <-chan []byte, outR, errR *os.File) (out, errTail []byte) {
	timer := time.NewTimer(readGrace)
	defer timer.Stop()
	for stdout != nil || stderr != nil {
		select {
		case out = <-stdout:
			stdout = nil
		case errTail = <-stderr:
			stderr = nil
		case <-timer.C:
			_ = outR.Close()
			_ = errR.Close()
		}
	}
	return out, errTail
}

// killGroup kills every process left in the group (ESRCH when none is).
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// startError says why the program could not be started, without the
// path lookup's details.
func startError(err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return errors.New("not found in PATH")
	}
	return fmt.Errorf("start: %w", err)
}

// withStderr appends the end of stderr, one line, to err.
func withStderr(err error, tail []byte) error {
	s := oneLine(tail)
	if s == "" {
		return err
	}
	return fmt.Errorf("%w: stderr: %s", err, s)
}

// oneLine makes program output printable on one line: invalid UTF-8 and
// control characters become spaces, runs of space one space.
func oneLine(b []byte) string {
	s := strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, string(b))
	return strings.Join(strings.Fields(s), " ")
}

// readBounded reads r until EOF, keeping at most limit+1 bytes; when more
// than limit arrive it closes over once and keeps reading (discarding),
// so that the writer is not blocked before it is killed.
func readBounded(r io.Reader, limit int, over chan<- struct{}) []byte {
	var buf bytes.Buffer
	chunk := make([]byte, 32<<10)
	signalled := false
	for {
		n, err := r.Read(chunk)
		if room := limit + 1 - buf.Len(); room > 0 {
			buf.Write(chunk[:min(n, room)])
		}
		if buf.Len() > limit && !signalled {
			close(over)
			signalled = true
		}
		if err != nil {
			return buf.Bytes()
		}
	}
}

// readTail reads r until EOF, keeping its last limit bytes.
func readTail(r io.Reader, limit int) []byte {
	var buf []byte
	chunk := make([]byte, 8<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if over := len(buf) - limit; over > 0 {
			buf = append(buf[:0], buf[over:]...)
		}
		if err != nil {
			return buf
		}
	}
}

// wireAnswer is the answer as printed; Time stays a string so that its
// error can be ours.
type wireAnswer struct {
	Actor   string `json:"actor"`
	Time    string `json:"time"`
	Source  string `json:"source"`
	EventID string `json:"event_id"`
	URL     string `json:"url"`
}

// parseAnswer decodes and checks one answer: a single JSON object with
// only the known fields.
func parseAnswer(out []byte) (Answer, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return Answer{}, errors.New("answer is empty")
	}
	if !utf8.Valid(out) {
		return Answer{}, errors.New("answer is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var w wireAnswer
	if err := dec.Decode(&w); err != nil {
		return Answer{}, fmt.Errorf("answer is not a JSON object of actor, time, source, event_id and url: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Answer{}, errors.New("answer has data after its JSON object")
	}
	a := Answer{Actor: w.Actor, Source: w.Source, EventID: w.EventID, URL: w.URL}
	var errs []error
	for _, f := range []struct {
		name, value string
		limit       int
	}{
		{"actor", w.Actor, MaxActor},
		{"source", w.Source, MaxSource},
		{"event_id", w.EventID, MaxEventID},
		{"url", w.URL, MaxURL},
		{"time", w.Time, 64},
	} {
		switch {
		case len(f.value) > f.limit:
			errs = append(errs, fmt.Errorf("%s is longer than %d bytes", f.name, f.limit))
		case strings.ContainsFunc(f.value, unicode.IsControl):
			errs = append(errs, fmt.Errorf("%s contains a control character", f.name))
		}
	}
	if strings.TrimSpace(w.Actor) == "" {
		errs = append(errs, errors.New("actor is required"))
	}
	if w.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, w.Time)
		if err != nil {
			errs = append(errs, errors.New("time is not an RFC 3339 timestamp"))
		}
		a.Time = t
	}
	if w.URL != "" {
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			errs = append(errs, errors.New("url is not an http(s) URL with a host and no userinfo"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Answer{}, fmt.Errorf("answer refused: %w", err)
	}
	return a, nil
}

// jsonProblem describes a decoding error without quoting the input:
// encoding/json's syntax errors do quote a character, type errors name
// the field, and unknown-field errors its name, which is the program's
// text and could be anything.
func jsonProblem(err error) string {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if slices.Contains([]string{"actor", "time", "source", "event_id", "url"}, typ.Field) {
			return fmt.Sprintf("%s is a JSON %s, not a string", typ.Field, typ.Value)
		}
		return "it is a JSON " + typ.Value + ", not an object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends early"
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return "it has an unknown field"
	}
	return "it does not decode"
}

// wrap names the program and redacts Env's values. The error keeps only
// the cause that callers test for (ErrTimeout, the context's errors),
// never the unredacted chain.
func (c Command) wrap(err error) error {
	name := "(none)"
	if len(c.Argv) > 0 {
		name = c.Argv[0]
	}
	e := &Error{Program: name, msg: c.redact(err.Error())}
	for _, cause := range []error{ErrTimeout, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, cause) {
			e.cause = cause
			break
		}
	}
	return e
}

// redact replaces Env's values, longest first, in s.
func (c Command) redact(s string) string {
	values := make([]string, 0, len(c.Env))
	for _, v := range c.Env {
		if len(v) >= minSecretLen {
			values = append(values, v)
		}
	}
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	for _, v := range values {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}

// Error is Ask's error: the program and what went wrong, redacted.
type Error struct {
	Program string
	msg     string
	cause   error // ErrTimeout, context.Canceled, context.DeadlineExceeded or nil
}

func (e *Error) Error() string { return "attribution command " + e.Program + ": " + e.msg }

// Unwrap returns ErrTimeout for a command killed at its Timeout, the
// context's error for one stopped by its context, else nil.
func (e *Error) Unwrap() error { return e.cause }
