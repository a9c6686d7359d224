package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/report"
)

// runPollInterval is how often `driftwatch run --wait` asks the daemon
// whether the run has finished.
const runPollInterval = 2 * time.Second

const runUsage = "driftwatch run WORKSPACE --token-file FILE [--server URL] [--follow | --wait] [--timeout D] [--format text|json] [--strict] [--cancel-on-interrupt]"

// runOptions are the flags of `driftwatch run`.
type runOptions struct {
	server, tokenFile, format string
	follow, wait, strict      bool
	cancelOnInterrupt         bool
	timeout                   time.Duration
}

// runCmd is `driftwatch run WORKSPACE`: it queues a run of the workspace on
// a running daemon (as POST /api/v1/workspaces/NAME/runs) and, with --follow
// or --wait, waits for its verdict and exits with the audit exit code.
func runCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills at once (e.g. while
	// --cancel-on-interrupt asks the daemon to cancel).
	go func() { <-ctx.Done(); stop() }()
	return runWorkspace(ctx, args, stdout, stderr, runPollInterval)
}

// runWorkspace is runCmd; ctx is done on Ctrl-C or SIGTERM.
func runWorkspace(ctx context.Context, args []string, stdout, stderr io.Writer, poll time.Duration) int {
	name, o, ok := parseRunArgs(args, stderr)
	if !ok {
		return report.ExitError
	}
	c := apiclient.New(o.server, o.tokenFile, nil)
	server := strings.TrimSuffix(o.server, "/")

	queued, err := c.Trigger(ctx, name)
	if err != nil {
		var tfe *apiclient.TokenFileError
		switch {
		case errors.As(err, &tfe):
			fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "driftwatch: run %s: interrupted before the daemon answered; a run may be queued (%s/api/v1/workspaces/%s/runs lists them)\n",
				name, redactedURL(server), url.PathEscape(name))
		default:
			fmt.Fprintf(stderr, "driftwatch: run %s: %s\n", name, triggerError(server, name, o.tokenFile, err))
		}
		return report.ExitError
	}
	id := queued.RunID
	page := runPage(ctx, c, id)
	queuedLine := fmt.Sprintf("run %s of %s: %s%s\n", id, name, queued.Status, inParens(page))
	if !o.follow && !o.wait {
		if o.format == "json" {
			return writeJSONOut(stdout, stderr, queued)
		}
		fmt.Fprint(stdout, queuedLine)
		return 0
	}
	fmt.Fprint(stderr, queuedLine)
	// Progress as audit shows it: plain lines, and on a terminal a live
	// status line too, unless the log streams to the same terminal.
	progress := report.NewProgress(stderr, isTerminal(stderr) && !o.follow, 1)
	defer progress.Close()
	progress.Started(name)

	wctx := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeoutCause(ctx, o.timeout, errWaitTimeout)
		defer cancel()
	}
	var logTo io.Writer
	if o.follow {
		logTo = stdout
	}
	res, err := await(wctx, c, o, id, logTo, stderr, poll)
	switch {
	case ctx.Err() != nil:
		if o.cancelOnInterrupt {
			fmt.Fprintf(stderr, "driftwatch: interrupted: cancelling run %s\n", id)
			cancelCmd([]string{id, "--server", o.server, "--token-file", o.tokenFile}, stderr, stderr)
			return report.ExitError
		}
		fmt.Fprintf(stderr, "driftwatch: interrupted: stopped waiting; run %s goes on on the daemon (driftwatch cancel %s stops it)\n", id, id)
		return report.ExitError
	case errors.Is(err, errWaitTimeout):
		fmt.Fprintf(stderr, "driftwatch: run %s of %s: not finished after %s (--timeout); it goes on on the daemon (driftwatch logs %s --follow)\n", id, name, o.timeout, id)
		return report.ExitError
	case err != nil:
		fmt.Fprintf(stderr, "driftwatch: run %s of %s: %v\n", id, name, err)
		return report.ExitError
	}
	var took time.Duration
	if res.DurationSeconds != nil {
		took = time.Duration(*res.DurationSeconds * float64(time.Second))
	}
	progress.Done(name, res.Status, res.Counts, took, res.Error)
	progress.Close()
	code := runExitCode(res, o.strict)
	switch {
	case o.format == "json":
		if jc := writeJSONOut(stdout, stderr, runJSON(res)); jc != 0 {
			return jc
		}
	case o.follow:
		fmt.Fprintln(stderr, runSummary(res, name, page))
	default:
		fmt.Fprintln(stdout, runSummary(res, name, page))
	}
	return code
}

// parseRunArgs parses "WORKSPACE [flags]" or "[flags] WORKSPACE".
func parseRunArgs(args []string, stderr io.Writer) (string, runOptions, bool) {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.server, "server", "http://127.0.0.1:8080", "URL of the driftwatch daemon")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the API bearer token (server.token_file)")
	fs.BoolVar(&o.follow, "follow", false, "stream the run's log to stdout until it ends, then print the verdict on stderr and exit with its code")
	fs.BoolVar(&o.follow, "f", false, "short for --follow")
	fs.BoolVar(&o.wait, "wait", false, "wait until the run ends, print a one-line summary and exit with its code")
	fs.DurationVar(&o.timeout, "timeout", 0, "with --follow or --wait: stop waiting after this long and exit 1 (the run goes on); 0 waits as long as the run takes")
	fs.StringVar(&o.format, "format", "text", "output: text, or json (the API's run)")
	fs.BoolVar(&o.strict, "strict", false, "exit 2 on state-backend findings too")
	fs.BoolVar(&o.cancelOnInterrupt, "cancel-on-interrupt", false, "cancel the run when interrupted (Ctrl-C, SIGTERM) while waiting; by default it goes on")
	name, ok := runIDArgs(fs, args, stderr, runUsage)
	if !ok {
		return "", o, false
	}
	var problems []string
	if o.tokenFile == "" {
		problems = append(problems, "--token-file is required")
	}
	if o.format != "text" && o.format != "json" {
		problems = append(problems, fmt.Sprintf("unknown format %q (use text or json)", o.format))
	}
	if o.format == "json" && o.follow {
		problems = append(problems, "--format json cannot be combined with --follow, which writes the log to stdout (use --wait)")
	}
	if o.timeout < 0 {
		problems = append(problems, "--timeout must not be negative")
	}
	if (o.timeout > 0 || o.cancelOnInterrupt || o.strict) && !o.follow && !o.wait {
		problems = append(problems, "--timeout, --strict and --cancel-on-interrupt need --follow or --wait")
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, "driftwatch: "+p)
	}
	return name, o, len(problems) == 0
}

// errWaitTimeout is the cause of the --timeout deadline.
var errWaitTimeout = errors.New("--timeout expired")

// triggerError explains a failed trigger: the workspace's busy run, an
// unknown workspace, a rejected token. It never shows the token.
func triggerError(server, name, tokenFile string, err error) string {
	var se *apiclient.StatusError
	if !errors.As(err, &se) {
		return err.Error()
	}
	server = redactedURL(server)
	switch {
	case errors.Is(se, apiclient.ErrConflict):
		if id := se.RunID; id != "" {
			return fmt.Sprintf("a run of %s is already queued or running: %s (driftwatch logs %s --follow shows it)", name, id, id)
		}
		return fmt.Sprintf("a run of %s is already queued or running (%s)", name, se)
	case errors.Is(se, apiclient.ErrNotFound):
		return fmt.Sprintf("%s: the daemon at %s has no workspace %q (%s/api/v1/workspaces lists its workspaces)", se, server, name, server)
	case errors.Is(se, apiclient.ErrUnauthorized):
		return fmt.Sprintf("%s: the daemon at %s rejected the token in %s (it must hold the daemon's server.token_file token)", se, server, tokenFile)
	}
	return se.Error()
}

// runPage is the absolute URL of run id's status page (the API's "url"),
// or "" when the daemon has no server.external_url (the URL is relative).
func runPage(ctx context.Context, c *apiclient.Client, id string) string {
	run, err := c.GetRun(ctx, id)
	if err != nil {
		return ""
	}
	if !strings.HasPrefix(run.URL, "https://") && !strings.HasPrefix(run.URL, "http://") {
		return ""
	}
	return run.URL
}

// await waits until run id has finished and returns it. With logTo it
// first copies the run's log stream there (the stream ends with the run);
// then, or if the stream breaks (a daemon restart), it polls the run
// every poll.
func await(ctx context.Context, c *apiclient.Client, o runOptions, id string, logTo, stderr io.Writer, poll time.Duration) (apiclient.Run, error) {
	var verdict apiclient.Status
	if logTo != nil {
		var err error
		verdict, err = c.FollowLog(ctx, id, logTo)
		if ctx.Err() != nil {
			return apiclient.Run{}, context.Cause(ctx)
		}
		switch {
		case errors.Is(err, apiclient.ErrUnauthorized), errors.Is(err, apiclient.ErrForbidden):
			fmt.Fprintf(stderr, "driftwatch: log of run %s refused: %s; waiting for its verdict\n", id, logError(err, o.server, o.tokenFile))
		case err != nil:
			fmt.Fprintf(stderr, "driftwatch: log stream of run %s cut short (%v); waiting for its verdict\n", id, err)
		}
	}
	warned := false
	for {
		r, err := c.GetRun(ctx, id)
		var se *apiclient.StatusError
		switch {
		case err == nil:
			if r.Finished() {
				return r, nil
			}
		case errors.Is(err, apiclient.ErrBadRun):
			return apiclient.Run{}, err
		case ctx.Err() != nil:
			return apiclient.Run{}, context.Cause(ctx)
		case errors.Is(err, apiclient.ErrNotFound) && verdict != "":
			// Ended without a record (a queued run skipped like an
			// overlapping slot): the stream's verdict is all there is.
			var r apiclient.Run
			r.ID, r.Status = id, verdict
			return r, nil
		case errors.As(err, &se) && se.Code < 500:
			return apiclient.Run{}, err
		case !warned:
			// The daemon may be restarting: keep asking.
			fmt.Fprintf(stderr, "driftwatch: run %s: %v (retrying every %s)\n", id, err, poll)
			warned = true
		}
		select {
		case <-ctx.Done():
			return apiclient.Run{}, context.Cause(ctx)
		case <-time.After(poll):
		}
	}
}

// runExitCode is the audit exit code of a finished run: 0 clean, 2 drift,
// pending or forbidden (and, when strict, backend findings), 1 for errored
// and for runs without a verdict (cancelled, interrupted).
func runExitCode(r apiclient.Run, strict bool) int {
	switch r.Status {
	case apiclient.StatusClean:
		if strict && r.Counts.Hygiene > 0 {
			return report.ExitChanges
		}
		return report.ExitClean
	case apiclient.StatusDrift, apiclient.StatusPending, apiclient.StatusValidation, apiclient.StatusForbidden:
		return report.ExitChanges
	}
	return report.ExitError
}

// runSummary is the one-line result: status, counts or error, duration,
// page.
func runSummary(r apiclient.Run, name, page string) string {
	s := fmt.Sprintf("run %s of %s: %s", r.ID, name, r.Status)
	if r.Status.Severity() < 0 {
		s += ", no verdict"
	} else if r.Status != apiclient.StatusErrored {
		s += fmt.Sprintf(" (drift %d, pending %d, forbidden %d", r.Counts.Drift, r.Counts.Pending, r.Counts.Forbidden)
		if r.Counts.Check > 0 {
			s += fmt.Sprintf(", check %d", r.Counts.Check)
		}
		s += ")"
	}
	if r.DurationSeconds != nil {
		s += " in " + time.Duration(*r.DurationSeconds*float64(time.Second)).Round(100*time.Millisecond).String()
	}
	if r.Error != "" {
		first, _, _ := strings.Cut(r.Error, "\n")
		s += ": " + first
	}
	return s + inParens(page)
}

// runJSON is the API's run for --format json, or, without a run record
// (see await), its id and verdict.
func runJSON(r apiclient.Run) any {
	if r.Raw == nil {
		return map[string]string{"id": r.ID, "status": string(r.Status)}
	}
	return r.Raw
}

func writeJSONOut(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "driftwatch: write output: %v\n", err)
		return report.ExitError
	}
	return 0
}

func inParens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// redactedURL hides a password in the server URL.
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the --server URL"
	}
	return u.Redacted()
}
