package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// logFlushWait bounds how long each hop waits, once the run is over, for
// its queued log to go on before the result goes: a slow or absent log
// never holds the result back for longer.
const logFlushWait = 30 * time.Second

// logSendWait bounds writing one log frame to the reporter.
const logSendWait = 30 * time.Second

// podLog is the runner container's run log (terraform.Request.Log): the
// local runner's complete, redacted lines, queued and sent to the reporter
// in log frames by a goroutine of its own, so the run never waits on the
// handoff.
type podLog struct {
	q    *lineQueue
	stop chan struct{} // closed: send nothing more
	done chan struct{} // closed when the sender has returned
}

// startPodLog starts sending the log over h; ctx bounds the sends.
func startPodLog(ctx context.Context, h *handoff) *podLog {
	l := &podLog{q: newLineQueue("the reporter container was slow to take them"),
		stop: make(chan struct{}), done: make(chan struct{})}
	go l.run(ctx, h)
	return l
}

func (l *podLog) Write(p []byte) (int, error) { return l.q.Write(p) }

func (l *podLog) run(ctx context.Context, h *handoff) {
	defer close(l.done)
	for {
		batch, _, last := l.q.take()
		if len(batch) > 0 {
			select {
			case <-l.stop:
				return
			default:
			}
			if err := h.send(ctx, frame{Kind: frameLog, Lines: batch}, logSendWait); err != nil {
				return // the handoff is broken: handing the result over says so
			}
			continue
		}
		if last {
			return
		}
		select {
		case <-l.q.wake:
		case <-l.stop:
			return
		}
	}
}

// finish sends what is queued, for at most wait, and stops. The result
// follows on the same connection, so the reporter has every line sent
// before it.
func (l *podLog) finish(wait time.Duration) {
	l.q.close()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
		close(l.stop)
		<-l.done
	}
}

// logForwarder is the reporter's side: it queues the runner's log lines
// (the token redacted, should any hold it) and posts them in order, one
// LogChunk at a time, to the daemon's LogRoute with the token, retrying
// what may be transient like Post. A chunk refused for good ends the
// forwarding (the rest is dropped); the result is delivered regardless.
type logForwarder struct {
	q      *lineQueue
	p      *Poster
	url    string
	token  string
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

// startLogForwarder starts posting to url with p's client and backoff.
func startLogForwarder(ctx context.Context, p *Poster, url, token string, log *slog.Logger) *logForwarder {
	ctx, cancel := context.WithCancel(ctx)
	f := &logForwarder{q: newLineQueue("the daemon was slow to take them"), p: p, url: url, token: token,
		log: log, cancel: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f
}

// add queues a log frame's lines; it never blocks. A nil forwarder (a spec
// without a LogURL) drops them.
func (f *logForwarder) add(lines []string) {
	if f == nil {
		return
	}
	for i, s := range lines {
		lines[i] = strings.ReplaceAll(s, f.token, "[REDACTED]")
	}
	f.q.add(lines)
}

func (f *logForwarder) run(ctx context.Context) {
	defer close(f.done)
	for {
		batch, seq, last := f.q.take()
		if len(batch) > 0 {
			if err := f.post(ctx, seq, batch); err != nil {
				f.log.Warn("the run's log is not delivered further (the result still is)", "err", err)
				return
			}
			continue
		}
		if last {
			return
		}
		select {
		case <-f.q.wake:
		case <-ctx.Done():
			return
		}
	}
}

// post delivers one chunk as Post delivers a result (retries included),
// until it is taken, refused for good or ctx ends.
func (f *logForwarder) post(ctx context.Context, seq int64, lines []string) error {
	body, err := encodeGzip(LogChunk{Seq: seq, Lines: lines})
	if err != nil {
		return fmt.Errorf("encode log chunk: %w", err)
	}
	_, err = f.p.send(ctx, "deliver the log", f.url, f.token, body)
	var se *StatusError
	if errors.As(err, &se) {
		return fmt.Errorf("log refused: %d %s: %s", se.Code, http.StatusText(se.Code), se.Body)
	}
	return err
}

// finish delivers what is queued, for at most wait, and stops; a nil
// forwarder has nothing to do.
func (f *logForwarder) finish(wait time.Duration) {
	if f == nil {
		return
	}
	f.q.close()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
		f.log.Warn("the run's log took too long to deliver; the rest is dropped", "waited", wait)
	}
	f.cancel()
	<-f.done
}
