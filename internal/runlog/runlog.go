package runlog

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// subBuffer is how many lines a subscriber may lag behind before lines are
// dropped for it (replaced by one marker line).
const subBuffer = 256

// maxLine caps one line held in the partial buffer: a writer that never
// sends a newline still produces (redacted) lines.
const maxLine = 64 << 10

// Log is one run's log. It is safe for concurrent use.
type Log struct {
	mu       sync.Mutex
	max      int
	redact   func(string) string
	partial  []byte
	head     []string // kept lines from the start
	headSize int
	tail     []string // ring of the newest lines (may be trimmed from the front)
	tailSize int
	omitted  int // bytes dropped between head and tail
	headFull bool
	closed   bool
	verdict  string
	subs     map[*sub]struct{}
}

type sub struct {
	ch      chan string
	dropped int
}

// New returns a log that keeps at most about maxBytes (half head, half
// tail; the omission marker is extra). redact may be nil.
func New(maxBytes int, redact func(string) string) *Log {
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Log{max: maxBytes, redact: redact, subs: map[*sub]struct{}{}}
}

// Write appends p; complete lines are redacted, stored and broadcast. After
// Close, writes are discarded.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = append(l.partial, p...)
			if len(l.partial) > maxLine {
				l.line(string(l.partial))
				l.partial = l.partial[:0]
			}
			break
		}
		l.partial = append(l.partial, p[:i]...)
		l.line(string(bytes.TrimSuffix(l.partial, []byte{'\r'})))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Printf writes a formatted line (e.g. a phase header "== init ==").
func (l *Log) Printf(format string, args ...any) {
	fmt.Fprintf(l, format+"\n", args...)
}

// line stores and broadcasts one complete line; l.mu is held.
func (l *Log) line(s string) {
	s = l.redact(s)
	size := len(s) + 1
	if !l.headFull && l.headSize+size <= l.max/2 {
		l.head = append(l.head, s)
		l.headSize += size
	} else {
		l.headFull = true
		l.tail = append(l.tail, s)
		l.tailSize += size
		for l.tailSize > l.max-l.max/2 && len(l.tail) > 0 {
			l.omitted += len(l.tail[0]) + 1
			l.tailSize -= len(l.tail[0]) + 1
			l.tail[0] = ""
			l.tail = l.tail[1:]
		}
	}
	for s2 := range l.subs {
		l.send(s2, s)
	}
}

// send delivers to a subscriber without blocking; a full subscriber loses
// lines and gets one marker once it has room again.
func (l *Log) send(s *sub, line string) {
	if s.dropped > 0 {
		select {
		case s.ch <- fmt.Sprintf("… %d lines dropped (slow reader) …", s.dropped):
			s.dropped = 0
		default:
			s.dropped++
			return
		}
	}
	select {
	case s.ch <- line:
	default:
		s.dropped++
	}
}

// lines returns the stored lines with the omission marker; l.mu is held.
func (l *Log) lines() []string {
	out := make([]string, 0, len(l.head)+len(l.tail)+1)
	out = append(out, l.head...)
	if l.omitted > 0 {
		out = append(out, Marker(l.omitted))
	}
	return append(out, l.tail...)
}

// Marker is the line standing for n omitted bytes.
func Marker(n int) string { return fmt.Sprintf("… %d bytes omitted …", n) }

// Lines returns the stored lines (head, marker, tail).
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines()
}

// Bytes returns the stored log, one "\n"-terminated line each, for storage.
func (l *Log) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	for _, s := range l.lines() {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Subscribe returns the lines stored so far and a channel of the lines
// written after them. The channel is closed by Close (or at once if the log
// is already closed) or when ctx ends. A subscriber that falls more than a
// few hundred lines behind loses lines (a marker line says how many); it
// never blocks the writer.
func (l *Log) Subscribe(ctx context.Context) (replay []string, live <-chan string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	replay = l.lines()
	s := &sub{ch: make(chan string, subBuffer)}
	if l.closed {
		close(s.ch)
		return replay, s.ch
	}
	l.subs[s] = struct{}{}
	go func() {
		<-ctx.Done()
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := l.subs[s]; ok {
			delete(l.subs, s)
			close(s.ch)
		}
	}()
	return replay, s.ch
}

// Close flushes a partial last line, records the verdict and ends every
// subscription. Later calls are no-ops.
func (l *Log) Close(verdict string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = nil
	}
	l.closed = true
	l.verdict = verdict
	for s := range l.subs {
		delete(l.subs, s)
		close(s.ch)
	}
}

// Done reports whether Close was called, and the verdict it was given.
func (l *Log) Done() (verdict string, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.verdict, l.closed
}

// ValuesNotice is the first line of a log that holds Terraform's full,
// human-readable plan text, attribute values included: only a workspace
// with log_plan_text: true writes it (the runner writes it before any
// Terraform output, so no Terraform output can forge it). Such a log is
// served only to an authenticated reader, even where reads are open.
const ValuesNotice = "== driftwatch: this log holds the full plan text, attribute values included (log_plan_text) =="

// HoldsValues reports whether a log (its start suffices) begins with
// ValuesNotice.
func HoldsValues(log []byte) bool {
	return bytes.HasPrefix(log, []byte(ValuesNotice+"\n")) || string(log) == ValuesNotice
}
