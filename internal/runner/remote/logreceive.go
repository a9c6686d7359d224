package remote

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// LogRoute is the ServeMux pattern of LogHandler (served by a
// CallbackServer): a run pod's reporter posts the run's log there, in
// order, while the run goes on.
const LogRoute = "POST /internal/v1/runs/{id}/log"

// LogPath returns the path of runID's log endpoint (LogRoute's).
func LogPath(runID string) string {
	return "/internal/v1/runs/" + url.PathEscape(runID) + "/log"
}

// LogChunk is one post to LogRoute: consecutive lines of the run's log
// (complete, without their newline), the first being line Seq of the
// reporter's stream (counted from 0). The sequence number makes a retry
// whose answer was lost harmless: lines already taken are skipped.
type LogChunk struct {
	Seq   int64    `json:"seq"`
	Lines []string `json:"lines"`
}

// maxLogChunkBody bounds a LogChunk's body, before and after gzip: a
// batch is at most maxLogBatchBytes of lines, which JSON escaping may
// grow.
const maxLogChunkBody = 1 << 20

// maxPendingLogBytes bounds the lines a Receiver keeps for a run whose log
// is not attached yet (an adopted run, before the daemon awaits it).
const maxPendingLogBytes = 256 << 10

// logSink is where one run's log lines go: the run's live log once
// attached, a bounded buffer before.
type logSink struct {
	mu      sync.Mutex
	w       io.Writer // nil: not attached (yet, or any more)
	red     sandbox.Redactor
	pending []string
	size    int
	dropped int
	next    int64 // the next line's sequence number
}

// AttachLog makes w receive runID's log as the run's pod posts it (each
// line, redacted of secrets, written whole with its newline), beginning
// with the lines received before. It replaces an earlier writer; a run
// that is not armed (Expect) is ignored. Forget detaches it. secrets are
// the daemon's values the pod does not know (terraform.Request.Redact):
// the pod's own runner redacted the rest.
func (r *Receiver) AttachLog(runID string, w io.Writer, secrets []string) {
	r.mu.Lock()
	e, ok := r.runs[runID]
	r.mu.Unlock()
	if !ok || w == nil {
		return
	}
	s := e.sink
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w, s.red = w, sandbox.NewRedactor(secrets)
	for _, line := range s.pending {
		s.emitLocked(line)
	}
	if s.dropped > 0 {
		s.emitLocked(droppedMarker(s.dropped, "they came before the daemon awaited the run"))
	}
	s.pending, s.size, s.dropped = nil, 0, 0
}

// detach stops writing into the run's log (Forget).
func (s *logSink) detach() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = nil
}

// take writes c's new lines, noting a gap in the sequence (lines this
// Receiver never got: a previous daemon's, or dropped).
func (s *logSink) take(c LogChunk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Seq > s.next {
		s.emitLocked(fmt.Sprintf("… %d lines of the run's log were not received here (sent to a previous daemon, or lost) …", c.Seq-s.next))
		s.next = c.Seq
	}
	for i, line := range c.Lines {
		if c.Seq+int64(i) < s.next {
			continue // taken already: a retry
		}
		s.emitLocked(line)
		s.next++
	}
}

func (s *logSink) emitLocked(line string) {
	if s.w == nil {
		if s.size+len(line) > maxPendingLogBytes {
			s.dropped++
			return
		}
		s.pending = append(s.pending, line)
		s.size += len(line)
		return
	}
	// A log write error must not fail the run (runlog.Log never fails).
	_, _ = io.WriteString(s.w, s.red.Apply(line)+"\n")
}

// LogHandler returns the http.Handler of LogRoute. A post is authenticated
// like a result, with the run's token, and refused like one (401; 403 for
// an unknown run or a wrong token alike; 410), but consumes nothing; once
// the result is delivered the log is closed: 409. A LogChunk taken is
// answered 204 (again for a retry); 400 malformed, 413 larger than 1 MiB.
func (r *Receiver) LogHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		refuse, ok := r.admit(w, req, http.MethodPost, "run log refused", "result already delivered: the run's log is closed")
		if !ok {
			return
		}
		b, code, err := readBody(w, req, maxLogChunkBody)
		if err != nil {
			refuse(code, err.Error())
			return
		}
		var c LogChunk
		if err := json.Unmarshal(b, &c); err != nil || c.Seq < 0 {
			refuse(http.StatusBadRequest, "malformed log chunk")
			return
		}
		r.mu.Lock()
		e, ok := r.runs[req.PathValue("id")]
		r.mu.Unlock()
		if ok {
			e.sink.take(c)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
