package server

import (
	"encoding/json"
	"errors"
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
	if s.o.LiveLog == nil {
		return nil
	}
	return s.o.LiveLog(id)
}

// apiRunLogs serves GET /api/v1/runs/{id}/logs: a run in flight streams as
// Server-Sent Events (replay, then live lines, then an "end" event with the
// verdict), unless the client accepts only text/plain, which gets the log so
// far; a finished run's stored log is text/plain, or the same event stream
// (replay and end) when the client accepts text/event-stream.
//
// The daemon saves a run's log before it stops answering LiveLog for it, so
// a client never falls between the two.
func (s *Server) apiRunLogs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if l := s.liveLog(id); l != nil {
		if wantsPlainText(r) {
			// A snapshot of the log so far (driftwatch logs without --follow).
			writeText(w, http.StatusOK, string(l.Bytes()))
			return
		}
		s.streamLive(w, r, l)
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
	if !acceptsEventStream(r) {
		writeText(w, http.StatusOK, string(log))
		return
	}
	sse := newSSE(w)
	if len(log) > 0 {
		for _, line := range strings.Split(strings.TrimSuffix(string(log), "\n"), "\n") {
			sse.data(line)
		}
	}
	sse.end(string(run.Status))
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
// until the log is closed (an "end" event) or the client goes away.
func (s *Server) streamLive(w http.ResponseWriter, r *http.Request, l *runlog.Log) {
	replay, live := l.Subscribe(r.Context())
	sse := newSSE(w)
	for _, line := range replay {
		sse.data(line)
	}
	sse.flush()
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
			sse.data(line)
			// Send what is queued in one flush.
			for n := 0; n < 64; n++ {
				select {
				case more, ok := <-live:
					if !ok {
						verdict, _ := l.Done()
						sse.end(verdict)
						return
					}
					sse.data(more)
					continue
				default:
				}
				break
			}
			if sse.flush() != nil {
				return
			}
		case <-tick.C:
			_, _ = w.Write([]byte(": keep-alive\n\n"))
			if sse.flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	rc := http.NewResponseController(w)
	// A plan can outlast the server's WriteTimeout; the stream has its own
	// keep-alives and ends with the run or the client.
	_ = rc.SetWriteDeadline(time.Time{})
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: rc}
}

// data writes one line as one event. CR is a line break in SSE, so it is
// dropped (lines never hold LF).
func (s *sseWriter) data(line string) {
	line = strings.ReplaceAll(line, "\r", "")
	_, _ = s.w.Write([]byte("data: " + line + "\n\n"))
}

func (s *sseWriter) flush() error { return s.rc.Flush() }

func (s *sseWriter) end(verdict string) {
	b, _ := json.Marshal(struct {
		Status string `json:"status"`
	}{verdict})
	_, _ = s.w.Write([]byte("event: end\ndata: " + string(b) + "\n\n"))
	_ = s.flush()
}

// apiCancel serves POST /api/v1/runs/{id}/cancel: 202 with status
// "cancelled" for a queued run (it is out of the queue and recorded), or
// "cancelling" once a running run's cancellation is requested (it ends as
// cancelled shortly after); 404 for an unknown run, 409 for a finished one.
func (s *Server) apiCancel(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r) {
		return
	}
	if s.o.Cancel == nil {
		writeError(w, http.StatusNotImplemented, "cancellation is not available on this driftwatch")
		return
	}
	id := r.PathValue("id")
	queued, err := s.o.Cancel(id)
	switch {
	case err == nil:
	case s.o.UnknownErr != nil && errors.Is(err, s.o.UnknownErr), errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown run")
		return
	case s.o.NotRunningErr != nil && errors.Is(err, s.o.NotRunningErr):
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
	s.o.Logger.Info("run cancelled through the api", "run", id, "status", status)
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
// in-flight run's page refreshes every 2 s.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run, err := s.o.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		s.render(w, r, http.StatusNotFound, s.pages.message, messagePageData{
			page:    s.newPage("driftwatch: unknown run", false),
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
	if d.Remediation, err = s.runRemediation(r.Context(), run); err != nil {
		s.pageError(w, r, err)
		return
	}
	d.page = s.newPage("driftwatch: run "+run.ID+" ("+string(run.Status)+")", d.Live)
	if d.Live {
		d.RefreshEvery = runPageRefresh
	}
	s.render(w, r, http.StatusOK, s.pages.run, d)
}
