package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/store"
)

// sseKeepAlive is how often an idle log stream sends a comment, so proxies
// do not close a quiet plan's connection.
const sseKeepAlive = 15 * time.Second

// runPageRefresh is the refresh period of an in-flight run's page.
const runPageRefresh = 2

func runPath(prefix, id string) string {
	return prefix + "/runs/" + url.PathEscape(id)
}

func (s *Server) liveLog(id string) *runlog.Log {
	return s.o.Control.LiveLog(id)
}

// apiRunLogs serves GET /api/v1/runs/{id}/logs: a run in flight streams as
// Server-Sent Events (replay, then live lines, then an "end" event with the
// verdict), unless the client accepts only text/plain, which gets the log so
// far; a finished run's stored log is text/plain, or the same event stream
// (replay and end) when the client accepts text/event-stream.
//
// The daemon saves a run's log before it stops answering LiveLog for it, so
// a client never falls between the two.
//
// It needs a read credential unless reads are open (handleLogs), and a
// log holding attribute values (runlog.HoldsValues) always does (reader).
func (s *Server) apiRunLogs(w http.ResponseWriter, r *http.Request) {
	authed := reader(r)
	id := r.PathValue("id")
	if l := s.liveLog(id); l != nil {
		if wantsPlainText(r) {
			// A snapshot of the log so far (driftwatch logs without --follow).
			b := l.Bytes()
			if !authed && runlog.HoldsValues(b) {
				s.refuseValues(w, r, false)
				return
			}
			writeText(w, http.StatusOK, string(b))
			return
		}
		s.streamLive(w, r, l, authed)
		return
	}
	run, err := s.o.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "unknown run")
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	var log []byte
	if s.o.Logs != nil {
		log, err = s.o.Logs.RunLog(r.Context(), id)
	} else {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no log is stored for this run")
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if !authed && runlog.HoldsValues(log) {
		s.refuseValues(w, r, false)
		return
	}
	if !acceptsEventStream(r) {
		writeText(w, http.StatusOK, string(log))
		return
	}
	if !s.openStream(w, r) {
		return
	}
	defer s.streams.Add(-1)
	sse := s.newSSE(w)
	if len(log) > 0 {
		for _, line := range strings.Split(strings.TrimSuffix(string(log), "\n"), "\n") {
			if sse.data(line) != nil {
				return
			}
		}
	}
	sse.end(string(run.Status))
}

// openStream takes one of the maxStreams log stream slots, or answers 503
// with Retry-After and returns false. The caller releases the slot
// (s.streams.Add(-1)) when its stream ends.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) bool {
	if n := s.streams.Add(1); n > s.maxStreams {
		s.streams.Add(-1)
		s.o.Logger.Warn("log stream refused: too many open", "path", r.URL.Path, "max", s.maxStreams)
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable,
			fmt.Sprintf("too many log streams are open (%d): retry shortly, or read the log so far as text/plain", s.maxStreams))
		return false
	}
	return true
}

// wantsPlainText reports a client that asks for text/plain and not for an
// event stream: it gets a snapshot of an in-flight run's log.
func wantsPlainText(r *http.Request) bool {
	return !acceptsEventStream(r) && strings.Contains(strings.Join(r.Header.Values("Accept"), ","), "text/plain")
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// streamLive writes the replay and then every live line, flushing each,
// until the log is closed (an "end" event), the client goes away or a
// write times out (a client that stopped reading). authed false: the
// reader has no credential (reads are open), so a log that holds values
// is refused.
func (s *Server) streamLive(w http.ResponseWriter, r *http.Request, l *runlog.Log, authed bool) {
	if !s.openStream(w, r) {
		return
	}
	defer s.streams.Add(-1)
	replay, live := l.Subscribe(r.Context())
	if !authed {
		if len(replay) == 0 {
			// Whether the log holds values shows in its first line (written
			// before any Terraform output), so wait for it before answering.
			select {
			case line, ok := <-live:
				if ok {
					replay = []string{line}
				}
			case <-r.Context().Done():
				return
			}
		}
		if len(replay) > 0 && runlog.HoldsValues([]byte(replay[0])) {
			s.refuseValues(w, r, false)
			return
		}
	}
	sse := s.newSSE(w)
	for _, line := range replay {
		if sse.data(line) != nil {
			return
		}
	}
	if sse.flush() != nil {
		return
	}
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-live:
			if !ok {
				if r.Context().Err() != nil {
					return
				}
				verdict, _ := l.Done()
				sse.end(verdict)
				return
			}
			_ = sse.data(line)
			// Send what is queued in one flush.
			for n := 0; n < 64 && sse.err == nil; n++ {
				select {
				case more, ok := <-live:
					if !ok {
						verdict, _ := l.Done()
						sse.end(verdict)
						return
					}
					_ = sse.data(more)
					continue
				default:
				}
				break
			}
			if sse.flush() != nil {
				return
			}
		case <-tick.C:
			_ = sse.write(": keep-alive\n\n")
			if sse.flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// sseWriter writes an event stream with a deadline on every write; after
// the first failed write it writes nothing more and err says why.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	err     error
}

func (s *Server) newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	sse := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: s.sseWriteTimeout}
	// A plan can outlast the server's WriteTimeout, which would cut the
	// stream; instead every write gets its own deadline (deadline), which
	// replaces it. Quiet streams write keep-alives, so an idle but
	// reading client keeps its stream.
	sse.deadline()
	w.WriteHeader(http.StatusOK)
	return sse
}

// deadline sets the connection's write deadline for the next write.
// Writers without deadlines (a test recorder) just have none.
func (s *sseWriter) deadline() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
}

func (s *sseWriter) write(b string) error {
	if s.err != nil {
		return s.err
	}
	s.deadline()
	_, s.err = s.w.Write([]byte(b))
	return s.err
}

// data writes one line as one event. CR is a line break in SSE, so it is
// dropped (lines never hold LF).
func (s *sseWriter) data(line string) error {
	return s.write("data: " + strings.ReplaceAll(line, "\r", "") + "\n\n")
}

func (s *sseWriter) flush() error {
	if s.err != nil {
		return s.err
	}
	s.deadline()
	s.err = s.rc.Flush()
	return s.err
}

func (s *sseWriter) end(verdict string) {
	b, _ := json.Marshal(struct {
		Status string `json:"status"`
	}{verdict})
	_ = s.write("event: end\ndata: " + string(b) + "\n\n")
	_ = s.flush()
}

// apiCancel serves POST /api/v1/runs/{id}/cancel: 202 with status
// "cancelled" for a queued run (it is out of the queue and recorded), or
// "cancelling" once a running run's cancellation is requested (it ends as
// cancelled shortly after); 404 for an unknown run, 409 for a finished one,
// 501 when the Control cannot cancel (errors.ErrUnsupported), 503 with the
// error's text when it does not run anything (ErrUnavailable: a standby).
func (s *Server) apiCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	queued, err := s.o.Control.Cancel(id)
	switch {
	case err == nil:
	case errors.Is(err, errors.ErrUnsupported):
		writeError(w, http.StatusNotImplemented, "cancellation is not available on this driftwatch")
		return
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown run")
		return
	case errors.Is(err, ErrUnavailable):
		// This daemon runs nothing (a standby): the text says why.
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	case errors.Is(err, ErrNotRunning):
		// Not in flight: a recorded run is finished (409), anything else
		// is unknown (404).
		if _, rerr := s.o.Store.Run(r.Context(), id); errors.Is(rerr, store.ErrNotFound) {
			writeError(w, http.StatusNotFound, "unknown run")
		} else {
			writeError(w, http.StatusConflict, "the run is not queued or running")
		}
		return
	default:
		s.internalError(w, r, err)
		return
	}
	status := "cancelling"
	if queued {
		status = string(store.RunCancelled)
	}
	who, _ := IdentityFrom(r.Context())
	s.o.Logger.Info("run cancelled through the api", "run", id, "status", status, "by", who.Actor())
	w.Header().Set("Location", s.prefix+"/api/v1/runs/"+url.PathEscape(id))
	writeJSON(w, http.StatusAccepted, struct {
		Run    string `json:"run"`
		Status string `json:"status"`
	}{id, status})
}

type runPageData struct {
	page
	Run    store.Run
	Live   bool
	HasLog bool
	Log    string
	// Remediation is the one the run proposed or applied, if any.
	Remediation *remediationView
}

// runPage serves /runs/{id}: the run and its log, server-rendered; an
// in-flight run's page refreshes every 2 s. Like the log itself it needs a
// read credential (HTTP Basic auth, for a browser) unless reads are open.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	authed := reader(r)
	id := r.PathValue("id")
	run, err := s.o.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		s.render(w, r, http.StatusNotFound, s.pages.message, messagePageData{
			page:    s.newPage(r, "driftwatch: unknown run", false),
			Heading: "Unknown run",
			Message: "No run with this id is recorded (it may have been pruned).",
		})
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	d := runPageData{Run: run}
	if l := s.liveLog(id); l != nil {
		if _, closed := l.Done(); !closed {
			d.Live = true
		}
		d.HasLog, d.Log = true, string(l.Bytes())
	} else if s.o.Logs != nil {
		b, err := s.o.Logs.RunLog(r.Context(), id)
		switch {
		case err == nil:
			d.HasLog, d.Log = true, string(b)
		case !errors.Is(err, store.ErrNotFound):
			s.pageError(w, r, err)
			return
		}
	}
	if d.HasLog && !authed && runlog.HoldsValues([]byte(d.Log)) {
		s.refuseValues(w, r, true)
		return
	}
	if d.Remediation, err = s.runRemediation(r.Context(), run); err != nil {
		s.pageError(w, r, err)
		return
	}
	d.page = s.newPage(r, "driftwatch: run "+run.ID+" ("+string(run.Status)+")", d.Live)
	if d.Live {
		d.RefreshEvery = runPageRefresh
	}
	s.render(w, r, http.StatusOK, s.pages.run, d)
}

// reader reports whether the request's identity holds a read role (a
// credential), not only anonymous access: a log holding attribute values
// is served to a reader alone.
func reader(r *http.Request) bool {
	id, _ := IdentityFrom(r.Context())
	return id.Has(RoleViewer)
}
