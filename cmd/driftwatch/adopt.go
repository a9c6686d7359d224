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

// adoptCmd is `driftwatch adopt SCAN FINDING...`: the import blocks and
// configuration Terraform generates for a scan's unmanaged resources
// (named by their finding addresses, as reports and alerts show them),
// proven by a plan of a scratch copy that imports them and does nothing
// else, written to --output (or stdout) for the workspace that should own
// them. Exit 0: proven; 2: not proven (what the plan would also do is on
// stderr); 1: an error.
func adoptCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("adopt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	output := fs.String("output", "", "write the generated configuration to this file instead of stdout")
	logLevel := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: driftwatch adopt [--config FILE] [--output FILE] SCAN FINDING...")
		fs.PrintDefaults()
	}
	pos, ok := parseInterleaved(fs, args)
	if !ok {
		return report.ExitError
	}
	if len(pos) < 2 {
		fs.Usage()
		return report.ExitError
	}
	logger, err := newLogger(stderr, *logLevel, "text")
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	cfg, loaded := loadConfig(*cfgPath, stderr)
	if !loaded {
		return report.ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := app.Adopt(ctx, cfg, pos[0], pos[1:], logger)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: adopt %s: %v\n", pos[0], err)
		return report.ExitError
	}
	for _, a := range out.Adoptions {
		fmt.Fprintf(stderr, "adopting  %s\n", a.Finding)
	}
	for _, m := range out.Missing {
		fmt.Fprintf(stderr, "missing   %s: the scan no longer lists it\n", m)
	}
	if !out.Proven {
		fmt.Fprintln(stderr, "not proven: a plan of the generated configuration does more than import:")
		for _, r := range out.Remaining {
			fmt.Fprintf(stderr, "  %s\n", r)
		}
		return report.ExitChanges
	}
	fmt.Fprintln(stderr, "proven: a plan of the generated configuration imports them and changes nothing else")
	if err := writeOutput(*output, stdout, func(w io.Writer) error {
		_, err := io.WriteString(w, out.File())
		return err
	}); err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	return report.ExitClean
}
