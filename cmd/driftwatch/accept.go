package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/report"
)

// acceptCmd is `driftwatch accept WORKSPACE [ADDRESS...]`: the code
// change that makes the configuration produce what exists, proven by a
// plan of the changed code, as a unified diff; with --propose, pushed as
// a branch of the workspace's repository with a pull (merge) request
// through accept.notifier. With --deletions, a resource deleted outside
// Terraform is accepted too: its block becomes a removed block with
// destroy = false. With --token-file it asks the daemon at --server
// instead (which proposes when its config says so) and waits for the
// outcome. Exit 0: proven (and proposed); 2: nothing accepted, or not
// proven (the remaining difference is on stderr); 1: an error.
func acceptCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("accept", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	output := fs.String("output", "", "write the diff to this file instead of stdout")
	propose := fs.Bool("propose", false, "push the proven change as a branch and open a pull (merge) request through accept.notifier")
	deletions := fs.Bool("deletions", false, "accept resources deleted outside Terraform too: each block becomes a removed block with destroy = false")
	logLevel := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	server := fs.String("server", "http://127.0.0.1:8080", "with --token-file: URL of the driftwatch daemon that accepts")
	tokenFile := fs.String("token-file", "", "file holding an operator's API token: ask the daemon at --server instead of running here")
	timeout := fs.Duration("timeout", 30*time.Minute, "with --token-file: how long to wait for the daemon's outcome")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: driftwatch accept [--config FILE] [--output FILE] [--propose] [--deletions] WORKSPACE [ADDRESS...]")
		fmt.Fprintln(stderr, "       driftwatch accept --token-file FILE [--server URL] [--output FILE] [--deletions] [--timeout D] WORKSPACE [ADDRESS...]")
		fs.PrintDefaults()
	}
	pos, ok := parseInterleaved(fs, args)
	if !ok {
		return report.ExitError
	}
	if len(pos) == 0 {
		fs.Usage()
		return report.ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var out apiclient.Acceptance
	if *tokenFile != "" {
		if *propose {
			fmt.Fprintln(stderr, "driftwatch: accept: --propose is the daemon's to decide (its accept.notifier) when --token-file asks it")
			return report.ExitError
		}
		a, err := remoteAccept(ctx, apiclient.New(*server, *tokenFile, nil), pos[0], pos[1:], *deletions, *timeout)
		if err != nil {
			fmt.Fprintf(stderr, "driftwatch: accept %s on %s: %v\n", pos[0], redactedURL(*server), err)
			return report.ExitError
		}
		out = a
	} else {
		logger, err := newLogger(stderr, *logLevel, "text")
		if err != nil {
			fmt.Fprintf(stderr, "driftwatch: %v\n", err)
			return report.ExitError
		}
		cfg, ok := loadConfig(*cfgPath, stderr)
		if !ok {
			return report.ExitError
		}
		a, err := app.Accept(ctx, cfg, pos[0], pos[1:], *propose, *deletions, logger)
		if err != nil {
			fmt.Fprintf(stderr, "driftwatch: accept %s: %v\n", pos[0], err)
			return report.ExitError
		}
		out = a
	}
	return printAccept(out, pos[0], *output, stdout, stderr)
}

// parseInterleaved parses args with fs, flags anywhere among the
// positional arguments, which it returns; false on a flag error (fs has
// said why).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		if fs.NArg() == 0 {
			return pos, true
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

// remoteAccept asks the daemon to accept and polls the acceptance until
// it has finished, or timeout.
func remoteAccept(ctx context.Context, c *apiclient.Client, workspace string, addresses []string, deletions bool, timeout time.Duration) (apiclient.Acceptance, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, err := c.Accept(ctx, workspace, addresses, deletions)
	if err != nil {
		return a, err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for a.State == "running" {
		select {
		case <-ctx.Done():
			return a, fmt.Errorf("acceptance %s still running: %w", a.ID, context.Cause(ctx))
		case <-tick.C:
		}
		if a, err = c.GetAcceptance(ctx, a.ID); err != nil {
			return a, err
		}
	}
	return a, nil
}

// printAccept prints out as stderr lines and the patch to output (or
// stdout), and returns the exit code.
func printAccept(out apiclient.Acceptance, workspace, output string, stdout, stderr io.Writer) int {
	for _, a := range out.Accepted {
		fmt.Fprintf(stderr, "accepted  %s: %s (%s)\n", addressAttr(a.Address, a.Attribute), a.Where, a.Kind)
	}
	for _, r := range out.Refused {
		fmt.Fprintf(stderr, "refused   %s: %s\n", addressAttr(r.Address, r.Attribute), r.Reason)
	}
	// The states are the API's (docs/api.md: acceptances).
	switch out.State {
	case "refused":
		fmt.Fprintln(stderr, "nothing to propose: every drifted attribute was refused")
		return report.ExitChanges
	case "not_proven":
		fmt.Fprintln(stderr, "not proven: a plan of the changed code still differs:")
		for _, r := range out.Remaining {
			fmt.Fprintf(stderr, "  %s\n", r)
		}
		return report.ExitChanges
	}
	if out.Patch != "" || out.PatchWithheld {
		fmt.Fprintln(stderr, "proven: a plan of the changed code shows no change for the accepted resources and nothing new")
	}
	if out.PatchWithheld {
		fmt.Fprintln(stderr, "the diff holds values, and the daemon serves it to a reader only: the token file's token reads nothing")
	}
	if out.Patch != "" {
		if err := writeOutput(output, stdout, func(w io.Writer) error {
			_, err := io.WriteString(w, out.Patch)
			return err
		}); err != nil {
			fmt.Fprintf(stderr, "driftwatch: %v\n", err)
			return report.ExitError
		}
	}
	switch out.State {
	case "failed":
		fmt.Fprintf(stderr, "driftwatch: accept %s: %s\n", workspace, out.Error)
		return report.ExitError
	case "proposed":
		p := out.Proposal
		verb := "opened"
		if p.Existing {
			verb = "already open"
		}
		fmt.Fprintf(stderr, "proposed: %s (#%d, %s), branch %s into %s\n", p.URL, p.Number, verb, p.Branch, p.Base)
	}
	return report.ExitClean
}

// addressAttr is ADDRESS.ATTRIBUTE, or ADDRESS for a whole resource (a
// deletion).
func addressAttr(address, attribute string) string {
	if attribute == "" {
		return address
	}
	return address + "." + attribute
}
