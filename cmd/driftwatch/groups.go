package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/report"
)

const groupsUsage = `usage:
  driftwatch groups [--all] [--format text|json] [--server URL] [--token-file FILE]
  driftwatch groups show ID [--format text|json] [--server URL] [--token-file FILE]`

// groupsCmd is `driftwatch groups`: the group incidents of a running
// daemon (drift of several workspaces that shares one cause, alerted as
// one), the open ones or with --all every one, one line each; `groups
// show ID` one group with its members. --format json prints the API's
// answer as it is.
func groupsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("groups", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:8080", "URL of the driftwatch daemon")
	tokenFile := fs.String("token-file", "", "file holding a token that reads (the API or the read token); none: read without a credential")
	all := fs.Bool("all", false, "list resolved groups too")
	format := fs.String("format", "text", "text, or json (the API's answer)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, groupsUsage)
		fs.PrintDefaults()
	}
	var id string
	show := len(args) > 0 && args[0] == "show"
	if show {
		args = args[1:]
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			id, args = args[0], args[1:]
		}
	}
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	switch {
	case show && id == "" && fs.NArg() == 1:
		id = fs.Arg(0)
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "driftwatch: unexpected argument %q\n%s\n", fs.Arg(0), groupsUsage)
		return report.ExitError
	}
	switch {
	case show && id == "":
		fmt.Fprintln(stderr, "driftwatch: groups show needs a group ID\n"+groupsUsage)
		return report.ExitError
	case show && *all:
		fmt.Fprintln(stderr, "driftwatch: --all lists groups: groups show takes none")
		return report.ExitError
	case *format != "text" && *format != "json":
		fmt.Fprintf(stderr, "driftwatch: unknown format %q (use text or json)\n", *format)
		return report.ExitError
	}
	c := apiclient.New(*server, *tokenFile, nil)
	ctx := context.Background()
	if show {
		g, err := c.GetGroup(ctx, id)
		if err != nil {
			fmt.Fprintf(stderr, "driftwatch: groups show %s: %s\n", id, groupsError(err, *server, *tokenFile))
			return report.ExitError
		}
		if *format == "json" {
			return writeJSONOut(stdout, stderr, g.Raw)
		}
		return printGroup(stdout, stderr, g)
	}
	l, err := c.ListGroups(ctx, *all)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: groups: %s\n", groupsError(err, *server, *tokenFile))
		return report.ExitError
	}
	if *format == "json" {
		return writeJSONOut(stdout, stderr, l.Raw)
	}
	return printGroups(stdout, stderr, l, *all)
}

// printGroups writes one line per group: id, state, since, title.
func printGroups(stdout, stderr io.Writer, l apiclient.Groups, all bool) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	switch {
	case len(l.Groups) > 0:
		fmt.Fprintln(tw, "GROUP\tSTATE\tSINCE\tTITLE")
		for _, g := range l.Groups {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.ID, g.State, stamp(g.OpenedAt), oneLine(g.Title))
		}
	case all:
		fmt.Fprintln(tw, "No groups.")
	default:
		fmt.Fprintln(tw, "No open groups.")
	}
	return flushed(tw, stderr)
}

// printGroup writes a group's cause, times and members.
func printGroup(stdout, stderr io.Writer, g apiclient.Group) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "group %s (%s): %s\n", g.ID, g.State, oneLine(g.Title))
	fmt.Fprintf(tw, "cause:\t%s: %s\n", g.Cause, oneLine(g.CauseKey))
	if g.Severity != "" {
		fmt.Fprintf(tw, "severity:\t%s\n", g.Severity)
	}
	fmt.Fprintf(tw, "members:\t%d in %d workspaces\n", len(g.Members), g.Workspaces)
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"first seen", g.FirstSeen}, {"last seen", g.LastSeen}, {"opened", g.OpenedAt}, {"last message", g.NotifiedAt}, {"resolved", g.ResolvedAt}} {
		if !t.at.IsZero() {
			fmt.Fprintf(tw, "%s:\t%s\n", t.name, stamp(t.at))
		}
	}
	if len(g.Members) > 0 {
		fmt.Fprintln(tw, "\nWORKSPACE\tKIND\tACTION\tADDRESS\tATTRIBUTES")
		for _, m := range g.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Workspace, m.Kind, m.Action, m.Address, strings.Join(m.Attributes, ", "))
		}
	}
	return flushed(tw, stderr)
}

func flushed(tw *tabwriter.Writer, stderr io.Writer) int {
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "driftwatch: write output: %v\n", err)
		return report.ExitError
	}
	return 0
}

// groupsError explains a failed groups call: the daemon's reason, and for
// a refused or missing token what it must hold. It never shows the token.
func groupsError(err error, server, tokenFile string) string {
	var se *apiclient.StatusError
	if !errors.As(err, &se) {
		return err.Error()
	}
	switch {
	case errors.Is(se, apiclient.ErrUnauthorized) && tokenFile == "":
		return fmt.Sprintf("%s: the daemon at %s serves groups to readers: pass --token-file", se, redactedURL(server))
	case errors.Is(se, apiclient.ErrUnauthorized):
		return fmt.Sprintf("%s: the daemon at %s rejected the token in %s", se, redactedURL(server), tokenFile)
	}
	return se.Error()
}
