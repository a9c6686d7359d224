package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Log stream limits.
const (
	// DefaultMaxLogStreams caps the event streams of run logs open at once,
	// server-wide; one more answers 503 with Retry-After.
	DefaultMaxLogStreams = 64
	// LogStreamWriteTimeout bounds every write of an event stream: a client
	// that stops reading loses its stream (and the goroutine serving it ends)
	// once the connection's buffers are full and a write waits this long.
	LogStreamWriteTimeout = 30 * time.Second
)

// sseKeepAlive is how often an idle log stream sends a comment, so proxies
// do not close a quiet plan's connection.
const sseKeepAlive = 15 * time.Second

// RunLogs serves GET /api/v1/runs/{id}/logs: a run in flight streams as
// Server-Sent Events (replay, then live lines, then an "end" event with the
// verdict), unless the client accepts only text/plain, which gets the log so
// far; a finished run's stored log is text/plain, or the same event stream
// (replay and end) when the client accepts text/event-stream.
//
// The daemon saves a run's log before it stops answering LiveLog for it, so
// a client never falls between the two.
//
// It needs a read credential unless reads are open (the route's rule), and a
// log holding attribute values (runlog.HoldsValues) always does (auth.Reader).
func (a *API) RunLogs(w http.ResponseWriter, r *http.Request) {
	authed := auth.Reader(r)
	id := r.PathValue("id")
	if l := a.src.LiveLog(id); l != nil {
		if wantsPlainText(r) {
			// A snapshot of the log so far (driftwatch logs without --follow).
			b := l.Bytes()
			if !authed && runlog.HoldsValues(b) {
				a.refuseValues(w)
				return
			}
			respond.Text(w, http.StatusOK, string(b))
			return
		}
		a.streamLive(w, r, l, authed)
		return
	}
	run, err := a.src.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, "unknown run")
		return
	}
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	var log []byte
	if a.src.Logs != nil {
		log, err = a.src.Logs.RunLog(r.Context(), id)
	} else {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, "no log is stored for this run")
		return
	}
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	if !authed && runlog.HoldsValues(log) {
		a.refuseValues(w)
		return
	}
	if !acceptsEventStream(r) {
		respond.Text(w, http.StatusOK, string(log))
		return
	}
	if !a.openStream(w, r) {
		return
	}
	defer a.streams.Add(-1)
	sse := a.newSSE(w)
	if len(log) > 0 {
		for _, line := range strings.Split(strings.TrimSuffix(string(log), "\n"), "\n") {
			if sse.data(line) != nil {
				return
			}
		}
	}
	sse.end(string(run.Status))
}

// openStream takes one of the MaxStreams log stream slots, or answers 503
// with Retry-After and returns false. The caller releases the slot
// (a.streams.Add(-1)) when its stream ends.
func (a *API) openStream(w http.ResponseWriter, r *http.Request) bool {
	if n := a.streams.Add(1); n > a.MaxStreams {
		a.streams.Add(-1)
		a.src.Logger.Warn("log stream refused: too many open", "path", r.URL.Path, "max", a.MaxStreams)
		w.Header().Set("Retry-After", "10")
		respond.Error(w, http.StatusServiceUnavailable,
			fmt.Sprintf("too many log streams are open (%d): retry shortly, or read the log so far as text/plain", a.MaxStreams))
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
func (a *API) streamLive(w http.ResponseWriter, r *http.Request, l *runlog.Log, authed bool) {
	if !a.openStream(w, r) {
		return
	}
	defer a.streams.Add(-1)
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
			a.refuseValues(w)
			return
		}
	}
	sse := a.newSSE(w)
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

func (a *API) newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	sse := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: a.StreamWriteTimeout}
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
	b, _ := json.Marshal(apitypes.LogEnd{Status: drift.Status(verdict)})
	_ = s.write("event: end\ndata: " + string(b) + "\n\n")
	_ = s.flush()
}

// Cancel serves POST /api/v1/runs/{id}/cancel: 202 with status
// "cancelled" for a queued run (it is out of the queue and recorded), or
// "cancelling" once a running run's cancellation is requested (it ends as
// cancelled shortly after); 404 for an unknown run, 409 for a finished one,
// 501 when the Control cannot cancel (errors.ErrUnsupported), 503 with the
// error's text when it does not run anything (control.ErrUnavailable: a standby).
func (a *API) Cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	queued, err := a.src.Control.Cancel(id)
	switch {
	case err == nil:
	case errors.Is(err, errors.ErrUnsupported):
		respond.Error(w, http.StatusNotImplemented, "cancellation is not available on this driftwatch")
		return
	case errors.Is(err, store.ErrNotFound):
		respond.Error(w, http.StatusNotFound, "unknown run")
		return
	case errors.Is(err, control.ErrUnavailable):
		// This daemon runs nothing (a standby): the text says why.
		respond.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	case errors.Is(err, control.ErrNotRunning):
		// Not in flight: a recorded run is finished (409), anything else
		// is unknown (404).
		if _, rerr := a.src.Store.Run(r.Context(), id); errors.Is(rerr, store.ErrNotFound) {
			respond.Error(w, http.StatusNotFound, "unknown run")
		} else {
			respond.Error(w, http.StatusConflict, "the run is not queued or running")
		}
		return
	default:
		a.internalError(w, r, err)
		return
	}
	status := "cancelling"
	if queued {
		status = string(store.RunCancelled)
	}
	who, _ := auth.IdentityFrom(r.Context())
	a.src.Logger.Info("run cancelled through the api", "run", id, "status", status, "by", who.Actor())
	w.Header().Set("Location", a.src.Prefix+"/api/v1/runs/"+url.PathEscape(id))
	respond.JSON(w, http.StatusAccepted, apitypes.Cancelled{Run: id, Status: drift.Status(status)})
}

// refuseValues refuses a log that holds attribute values to a reader
// without a credential.
func (a *API) refuseValues(w http.ResponseWriter) {
	ref := a.auth.ValuesRefusal()
	respond.Refuse(w, ref.Code, ref.Message)
}

// OpenStreams is the number of log event streams open now.
func (a *API) OpenStreams() int64 { return a.streams.Load() }
