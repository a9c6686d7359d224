package remote

import (
	"fmt"
	"strings"
	"sync"
)

// A run pod's log travels in three hops, each of which must never hold the
// run up: the runner container's podLog queues the local runner's lines and
// sends them to the reporter in log frames; the reporter's logForwarder
// queues them and posts them in LogChunks to the daemon (LogRoute); the
// Receiver writes them into the run's live log (AttachLog). Both queues are
// a lineQueue: bounded, dropping the newest lines when full and saying so
// in the log, in order.

// maxQueuedLogBytes bounds the lines a queue holds waiting for the next
// hop: beyond, lines are dropped (and counted in a marker line).
const maxQueuedLogBytes = 1 << 20

// maxLogLine bounds one line: longer ones are cut (the local runner's
// lines are no longer: its line buffer emits 64 KiB without a newline as a
// line).
const maxLogLine = 64 << 10

// maxLogBatchBytes bounds the lines of one log frame or chunk.
const maxLogBatchBytes = 128 << 10

// droppedMarker is the line standing for n lines a hop dropped.
func droppedMarker(n int, why string) string {
	return fmt.Sprintf("… %d lines of the run's log dropped: %s …", n, why)
}

// lineQueue is a bounded FIFO of log lines, safe for concurrent use. A line
// that does not fit is dropped; the next line that fits is preceded by a
// marker saying how many were (why says who was slow).
type lineQueue struct {
	why  string
	max  int
	wake chan struct{} // a line was added, or the queue closed

	mu      sync.Mutex
	lines   []string
	size    int
	dropped int
	taken   int64 // lines taken so far: the sequence number of lines[0]
	closed  bool
}

func newLineQueue(why string) *lineQueue {
	return &lineQueue{why: why, max: maxQueuedLogBytes, wake: make(chan struct{}, 1)}
}

// Write queues p's lines. Its writer, the local runner, writes whole
// lines (terraform.Request.Log), so a last line without its newline counts
// as whole too. It never blocks on the next hop.
func (q *lineQueue) Write(p []byte) (int, error) {
	if len(p) > 0 {
		q.add(strings.Split(strings.TrimSuffix(string(p), "\n"), "\n"))
	}
	return len(p), nil
}

// add queues whole lines (a log frame's).
func (q *lineQueue) add(lines []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	for _, s := range lines {
		q.pushLocked(s)
	}
	q.signal()
}

func (q *lineQueue) pushLocked(s string) {
	if len(s) > maxLogLine {
		s = s[:maxLogLine]
	}
	if q.dropped > 0 {
		m := droppedMarker(q.dropped, q.why)
		if q.size+len(m)+len(s) > q.max {
			q.dropped++
			return
		}
		q.lines = append(q.lines, m)
		q.size += len(m)
		q.dropped = 0
	}
	if q.size+len(s) > q.max {
		q.dropped++
		return
	}
	q.lines = append(q.lines, s)
	q.size += len(s)
}

func (q *lineQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close flushes a pending drop marker (which may overrun the bound by one
// line); later lines are discarded.
func (q *lineQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.dropped > 0 {
		m := droppedMarker(q.dropped, q.why)
		q.lines = append(q.lines, m)
		q.size += len(m)
		q.dropped = 0
	}
	q.closed = true
	q.signal()
}

// take removes and returns the oldest lines, up to maxLogBatchBytes (one
// line at least), and the sequence number of the first (how many lines were
// taken before it). It returns none when the queue is empty; closed tells
// whether more may come.
func (q *lineQueue) take() (batch []string, seq int64, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	size := 0
	n := 0
	for n < len(q.lines) && (n == 0 || size+len(q.lines[n]) <= maxLogBatchBytes) {
		size += len(q.lines[n])
		n++
	}
	batch = append([]string(nil), q.lines[:n]...)
	clear(q.lines[:n])
	q.lines = q.lines[n:]
	q.size -= size
	seq = q.taken
	q.taken += int64(n)
	return batch, seq, q.closed && len(q.lines) == 0
}
