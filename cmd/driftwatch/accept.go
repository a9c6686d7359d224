package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/report"
)

// acceptCmd is `driftwatch accept WORKSPACE [ADDRESS...]`: the code
// change that makes the configuration produce what exists, proven by a
// plan of the changed code, as a unified diff; with --propose, pushed as
// a branch of the workspace's repository with a pull (merge) request
// through accept.notifier. With --deletions, a resource deleted outside
// Terraform is accepted too: its block becomes a removed block with
// destroy = false. Exit 0: proven (and proposed); 2: nothing
// accepted, or not proven (the remaining difference is on stderr); 1: an
// error.
func acceptCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("accept", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	output := fs.String("output", "", "write the diff to this file instead of stdout")
	propose := fs.Bool("propose", false, "push the proven change as a branch and open a pull (merge) request through accept.notifier")
	deletions := fs.Bool("deletions", false, "accept resources deleted outside Terraform too: each block becomes a removed block with destroy = false")
	logLevel := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: driftwatch accept [--config FILE] [--output FILE] [--propose] [--deletions] WORKSPACE [ADDRESS...]")
		fs.PrintDefaults()
	}
	// Flags may follow the workspace and addresses.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return report.ExitError
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) == 0 {
		fs.Usage()
		return report.ExitError
	}
	logger, err := newLogger(stderr, *logLevel, "text")
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return report.ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := app.Accept(ctx, cfg, pos[0], pos[1:], *propose, *deletions, logger)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: accept %s: %v\n", pos[0], err)
		return report.ExitError
	}
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
	if out.Patch != "" {
		fmt.Fprintln(stderr, "proven: a plan of the changed code shows no change for the accepted resources and nothing new")
		if err := writeOutput(*output, stdout, func(w io.Writer) error {
			_, err := io.WriteString(w, out.Patch)
			return err
		}); err != nil {
			fmt.Fprintf(stderr, "driftwatch: %v\n", err)
			return report.ExitError
		}
	}
	switch out.State {
	case "failed":
		fmt.Fprintf(stderr, "driftwatch: accept %s: %s\n", pos[0], out.Error)
		return report.ExitError
	case "proposed":
		verb := "opened"
		if out.ProposalExisting {
			verb = "already open"
		}
		fmt.Fprintf(stderr, "proposed: %s (#%d, %s), branch %s into %s\n", out.ProposalURL, out.ProposalNumber, verb, out.Branch, out.Base)
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
