package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/report"
)

const silenceUsage = `usage:
  driftwatch silence WORKSPACE --for D --comment TEXT --token-file FILE [--starts-at T] [--by WHO] [--server URL]
  driftwatch silence --label k=v [--label k=v]... --for D --comment TEXT --token-file FILE [...]
  driftwatch silence --list [--format text|json] [--server URL]
  driftwatch silence --expire ID --token-file FILE [--by WHO] [--server URL]`

// silenceOptions are the flags of `driftwatch silence`.
type silenceOptions struct {
	server, tokenFile, comment, by, format, expire, startsAt string
	labels                                                   listFlag
	dur                                                      time.Duration
	list                                                     bool
}

// silenceCmd is `driftwatch silence`: it adds a silence on a running
// daemon (one workspace, or every workspace with the labels), lists the
// silences and maintenance windows, or ends a silence early. A silenced
// workspace is still checked; its messages are held until the silence
// ends, then what changed is sent in one message.
func silenceCmd(args []string, stdout, stderr io.Writer) int {
	var o silenceOptions
	fs := flag.NewFlagSet("silence", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.server, "server", "http://127.0.0.1:8080", "URL of the driftwatch daemon")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the API bearer token (server.token_file); needed to add or expire")
	fs.DurationVar(&o.dur, "for", 0, "how long notifications are held, e.g. 4h or 90m")
	fs.StringVar(&o.comment, "comment", "", "why (required): shown on the status page with who and until when")
	fs.Var(&o.labels, "label", "silence every workspace with this label, key=value (repeatable; all must match)")
	fs.StringVar(&o.startsAt, "starts-at", "", "start later, at this RFC 3339 time (default: now)")
	fs.StringVar(&o.by, "by", os.Getenv("USER"), "who silences (or expires): shown with the silence")
	fs.BoolVar(&o.list, "list", false, "list the silences and maintenance windows")
	fs.StringVar(&o.format, "format", "text", "with --list: text, or json (the API's answer)")
	fs.StringVar(&o.expire, "expire", "", "end silence ID now; the messages it held are sent at once")
	var workspace string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		workspace, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	switch {
	case workspace == "" && fs.NArg() == 1:
		workspace = fs.Arg(0)
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "driftwatch: unexpected argument %q\n", fs.Arg(0))
		return report.ExitError
	}
	c := apiclient.New(o.server, o.tokenFile, nil)
	ctx := context.Background()
	switch {
	case o.list:
		if workspace != "" || len(o.labels) > 0 || o.expire != "" {
			fmt.Fprintln(stderr, "driftwatch: --list takes no workspace, --label or --expire")
			return report.ExitError
		}
		return listSilences(ctx, c, o, stdout, stderr)
	case o.expire != "":
		if workspace != "" || len(o.labels) > 0 {
			fmt.Fprintln(stderr, "driftwatch: --expire takes no workspace or --label")
			return report.ExitError
		}
		return expireSilence(ctx, c, o, stdout, stderr)
	}
	return addSilence(ctx, c, workspace, o, stdout, stderr)
}

func addSilence(ctx context.Context, c *apiclient.Client, workspace string, o silenceOptions, stdout, stderr io.Writer) int {
	if workspace == "" && len(o.labels) == 0 {
		fmt.Fprintln(stderr, "driftwatch: "+silenceUsage)
		return report.ExitError
	}
	var problems []string
	if workspace != "" && len(o.labels) > 0 {
		problems = append(problems, "a silence is for a WORKSPACE or for --label, not both")
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		problems = append(problems, "--label: "+err.Error())
	}
	if o.dur <= 0 {
		problems = append(problems, "--for is required: how long to hold notifications, e.g. --for 4h")
	}
	if strings.TrimSpace(o.comment) == "" {
		problems = append(problems, `--comment is required: why (on-call reads it), e.g. --comment "DB migration, CHG-1234"`)
	}
	var start time.Time
	if o.startsAt != "" {
		if start, err = time.Parse(time.RFC3339, o.startsAt); err != nil {
			problems = append(problems, fmt.Sprintf("--starts-at %q must be an RFC 3339 time, e.g. 2026-03-14T22:00:00Z", o.startsAt))
		}
	}
	if o.tokenFile == "" {
		problems = append(problems, "--token-file is required")
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, "driftwatch: "+p)
		}
		return report.ExitError
	}
	if len(labels) == 0 {
		labels = nil
	}
	s, err := c.AddSilence(ctx, apiclient.NewSilence{
		Workspace: workspace, Labels: labels, For: o.dur, StartsAt: start, Comment: o.comment, CreatedBy: o.by,
	})
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: silence %s: %s\n", silenceTarget(workspace, labels), silenceError(err, o))
		return report.ExitError
	}
	held := "held until " + stamp(s.EndsAt.Time)
	if !s.Active {
		held = "held from " + stamp(s.StartsAt.Time) + " until " + stamp(s.EndsAt.Time)
	}
	fmt.Fprintf(stdout, "silence %s: notifications of %s %s (by %s: %s)\n",
		s.ID, silenceTarget(s.Workspace, s.Labels), held, orUnknown(s.CreatedBy), s.Comment)
	return 0
}

func expireSilence(ctx context.Context, c *apiclient.Client, o silenceOptions, stdout, stderr io.Writer) int {
	if o.tokenFile == "" {
		fmt.Fprintln(stderr, "driftwatch: --token-file is required")
		return report.ExitError
	}
	s, err := c.ExpireSilence(ctx, o.expire, o.by)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: silence --expire %s: %s\n", o.expire, silenceError(err, o))
		return report.ExitError
	}
	fmt.Fprintf(stdout, "silence %s expired: notifications of %s are sent again (what it held goes out now)\n",
		s.ID, silenceTarget(s.Workspace, s.Labels))
	return 0
}

func listSilences(ctx context.Context, c *apiclient.Client, o silenceOptions, stdout, stderr io.Writer) int {
	if o.format != "text" && o.format != "json" {
		fmt.Fprintf(stderr, "driftwatch: unknown format %q (use text or json)\n", o.format)
		return report.ExitError
	}
	l, err := c.ListSilences(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: silence --list: %s\n", silenceError(err, o))
		return report.ExitError
	}
	if o.format == "json" {
		return writeJSONOut(stdout, stderr, l.Raw)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if len(l.Silences) == 0 {
		fmt.Fprintln(tw, "No silences.")
	} else {
		fmt.Fprintln(tw, "SILENCE\tSTATE\tMATCHES\tFROM\tUNTIL\tBY\tCOMMENT")
		for _, s := range l.Silences {
			state := "scheduled"
			if s.Active {
				state = "active"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, state, matches(s.Workspace, nil, s.Labels),
				stamp(s.StartsAt.Time), stamp(s.EndsAt.Time), orUnknown(s.CreatedBy), oneLine(s.Comment))
		}
	}
	if len(l.Windows) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "WINDOW\tSTATE\tMATCHES\tSCHEDULE\tDURATION")
		for _, w := range l.Windows {
			state := "off, next " + stamp(w.NextStart.Time)
			switch {
			case w.Active:
				state = "on until " + stamp(w.Ends.Time)
			case w.NextStart.IsZero():
				state = "off"
			}
			sched := w.Schedule
			if w.TimeZone != "" {
				sched += " (" + w.TimeZone + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.Name, state, matches("", w.Workspaces, w.Labels), sched, w.Duration)
		}
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "driftwatch: write output: %v\n", err)
		return report.ExitError
	}
	return 0
}

// silenceError explains a failed silence call: the daemon's reason, and
// for a refused token what it must hold. It never shows the token.
func silenceError(err error, o silenceOptions) string {
	var se *apiclient.StatusError
	switch {
	case !errors.As(err, &se):
		return err.Error()
	case errors.Is(se, apiclient.ErrUnauthorized):
		return fmt.Sprintf("%s: the daemon at %s rejected the token in %s (it must hold the daemon's server.token_file token)",
			se, redactedURL(strings.TrimSuffix(o.server, "/")), o.tokenFile)
	case se.Code == 501:
		return fmt.Sprintf("%s (the daemon at %s is a version without silences)", se, redactedURL(strings.TrimSuffix(o.server, "/")))
	}
	return se.Error()
}

// silenceTarget words what a silence matches: "workspace NAME" or
// "workspaces with k=v,k2=v2".
func silenceTarget(workspace string, labels map[string]string) string {
	if workspace != "" {
		return "workspace " + workspace
	}
	return "workspaces with " + strings.Join(labelPairs(labels), ",")
}

// matches is what a silence or window matches, for a table cell.
func matches(workspace string, globs []string, labels map[string]string) string {
	parts := slices.Clone(globs)
	if workspace != "" {
		parts = append(parts, workspace)
	}
	parts = append(parts, labelPairs(labels)...)
	if len(parts) == 0 {
		return "every workspace"
	}
	return strings.Join(parts, ",")
}

func labelPairs(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// stamp is t in UTC, to the second: "2026-03-14T07:00:00Z".
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// oneLine keeps a comment on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
