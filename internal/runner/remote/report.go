package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"
)

// Reporter is the reporter container of a run pod (`driftwatch runner
// report`): the only process of the pod that can read the run's token. It
// takes the runner container's result over the handoff socket and delivers
// it to the daemon, and asks the daemon's proceed check for it. The zero
// value is ready to use.
type Reporter struct {
	// Poster delivers the result (default: a zero Poster). Without a
	// Client of its own, it gets the spec's (Spec.CallbackClient: the
	// system roots plus the spec's CallbackCA).
	Poster *Poster
	// Checker asks the proceed check (default: a zero Checker); its Client
	// likewise defaults to the spec's.
	Checker *Checker
	// Logger records what the reporter does (default: discard).
	Logger *slog.Logger
	// LogFlushWait bounds how long the result waits for the run's log to
	// be delivered (default 30 s).
	LogFlushWait time.Duration
}

// Report loads the spec at specPath and the token it names, listens on the
// unix socket at socketPath, accepts exactly one connection (the runner's)
// and closes the listener, answers the runner's proceed checks (a
// remediation spec only) by asking the daemon with the token, forwards the
// runner's log lines to the spec's LogURL as they come (in order, the
// token redacted, from a bounded queue: a slow daemon makes lines drop, a
// marker counts them; a refusal ends the forwarding), takes the runner's
// result and, once the log is delivered or 30 s have passed, delivers the
// result to the spec's callback URL.
//
// It returns nil once the result is delivered (a failed run's included).
// It returns an error, and main exits non-zero so that the pod fails (the
// daemon then records the run errored from the Job), when the spec or the
// token is unusable, no runner connects by the spec's deadline, the
// runner's connection ends without a result, the result is invalid, or the
// daemon refuses it. A 409 (ConflictError: the daemon holds a different
// result for this run, posted with this run's token by someone else first)
// is logged as suspicious. Errors never include the token.
//
// ctx is a hard stop. Main does not end it on SIGTERM: when the pod is
// stopped, the runner cuts its run short and hands that result over, which
// is still delivered until the deadline or the kubelet's kill.
func (rp *Reporter) Report(ctx context.Context, specPath, socketPath string) error {
	log := rp.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	spec, err := LoadSpec(specPath)
	if err != nil {
		return fmt.Errorf("reporter: %w", err)
	}
	token, err := readToken(spec.TokenFile)
	if err != nil {
		return fmt.Errorf("reporter: token: %w", err)
	}
	log = log.With("run_id", spec.RunID)
	ctx, cancel := context.WithDeadline(ctx, spec.ExpiresAt)
	defer cancel()
	p, c, err := rp.clients(spec)
	if err != nil {
		return fmt.Errorf("reporter: %w", err)
	}

	ln, err := listenHandoff(socketPath)
	if err != nil {
		return fmt.Errorf("reporter: listen on %s: %w", socketPath, err)
	}
	conn, err := acceptOne(ctx, ln)
	if err != nil {
		return fmt.Errorf("reporter: run %s: %w", spec.RunID, err)
	}
	log.Info("runner connected; no other connection is accepted", peerAttrs(conn)...)
	var fw *logForwarder
	if spec.LogURL != "" {
		fw = startLogForwarder(ctx, p, spec.LogURL, token, log)
	}
	res, err := rp.serve(ctx, conn, spec, token, c, fw, log)
	_ = conn.Close()
	// The log goes first, so the daemon's stored log has it all; but a
	// slow or failing log never keeps the result from the daemon.
	flush := rp.LogFlushWait
	if flush <= 0 {
		flush = logFlushWait
	}
	fw.finish(flush)
	if err != nil {
		return fmt.Errorf("reporter: run %s: %w", spec.RunID, err)
	}

	err = p.Post(ctx, spec.CallbackURL, token, res)
	var ce *ConflictError
	if errors.As(err, &ce) {
		log.Error("suspicious: the daemon holds a different result for this run; someone else posted with its token "+
			"(the run is recorded errored)", "attempt", ce.Attempt, "first_post", ce.Attempt == 1)
	}
	if err != nil {
		return fmt.Errorf("reporter: run %s: deliver result: %w", spec.RunID, err)
	}
	log.Info("result delivered", "failed", res.Error != nil)
	return nil
}

// serve answers the runner's frames until its result comes.
func (rp *Reporter) serve(ctx context.Context, conn net.Conn, spec *Spec, token string, c *Checker, fw *logForwarder, log *slog.Logger) (Result, error) {
	answer := func(f frame) error {
		defer deadlineConn(ctx, conn, time.Minute)()
		return writeFrame(conn, f)
	}
	for {
		var f frame
		err := func() error {
			// The run takes as long as it takes: bounded by the deadline.
			defer deadlineConn(ctx, conn, time.Until(spec.ExpiresAt))()
			var err error
			f, err = readFrame(conn)
			return err
		}()
		switch {
		case errors.Is(err, io.EOF):
			return Result{}, errors.New("the runner closed the handoff without a result (did the runner container fail?)")
		case err != nil:
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
			}
			return Result{}, fmt.Errorf("handoff: %w", err)
		}
		switch f.Kind {
		case frameLog:
			fw.add(f.Lines)
		case frameProceed:
			if spec.Remediation == nil {
				if err := answer(frame{Kind: frameError, Error: "not a remediation run"}); err != nil {
					return Result{}, fmt.Errorf("handoff: %w", err)
				}
				continue
			}
			ref := c.Check(ctx, spec.ProceedURL, token)
			log.Info("proceed check answered", "proceed", ref == nil)
			if err := answer(frame{Kind: frameAnswer, Refusal: ref}); err != nil {
				return Result{}, fmt.Errorf("handoff: %w", err)
			}
		case frameResult:
			if f.Result == nil {
				_ = answer(frame{Kind: frameError, Error: "result frame without a result"})
				return Result{}, errors.New("the runner handed over an empty result")
			}
			if err := f.Result.validate(spec.RunID); err != nil {
				_ = answer(frame{Kind: frameError, Error: err.Error()})
				return Result{}, fmt.Errorf("the runner handed over an invalid result: %w", err)
			}
			if err := answer(frame{Kind: frameReceived}); err != nil {
				// The runner may have gone meanwhile: the result is whole,
				// deliver it.
				log.Warn("could not confirm the handoff to the runner", "err", err)
			}
			return *f.Result, nil
		default:
			_ = answer(frame{Kind: frameError, Error: fmt.Sprintf("unknown frame %q", f.Kind)})
			return Result{}, fmt.Errorf("the runner sent an unknown frame %q", f.Kind)
		}
	}
}

// clients returns the Poster and Checker of a run: the configured ones,
// with the spec's HTTP client (its CallbackCA) where they have none.
func (rp *Reporter) clients(spec *Spec) (*Poster, *Checker, error) {
	var p Poster
	if rp.Poster != nil {
		p = *rp.Poster
	}
	var c Checker
	if rp.Checker != nil {
		c = *rp.Checker
	}
	var err error
	if p.Client == nil {
		if p.Client, err = spec.CallbackClient(30 * time.Second); err != nil {
			return nil, nil, err
		}
	}
	if c.Client == nil {
		if c.Client, err = spec.CallbackClient(10 * time.Second); err != nil {
			return nil, nil, err
		}
	}
	return &p, &c, nil
}
