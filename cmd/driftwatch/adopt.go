package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/report"
)

// adoptCmd is `driftwatch adopt SCAN FINDING...`: the import blocks and
// configuration Terraform generates for a scan's unmanaged resources
// (named by their finding addresses, as reports and alerts show them),
// proven by a plan of a scratch copy that imports them and does nothing
// else, written to --output (or stdout) for the workspace that should own
// them. With --token-file it asks the daemon at --server instead, and
// waits for its answer. Exit 0: proven; 2: not proven (what the plan would
// also do is on stderr); 1: an error.
func adoptCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("adopt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	output := fs.String("output", "", "write the generated configuration to this file instead of stdout")
	logLevel := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	server := fs.String("server", "http://127.0.0.1:8080", "with --token-file: URL of the driftwatch daemon that adopts")
	tokenFile := fs.String("token-file", "", "file holding an operator's API token: ask the daemon at --server instead of running here")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: driftwatch adopt [--config FILE] [--output FILE] SCAN FINDING...")
		fmt.Fprintln(stderr, "       driftwatch adopt --token-file FILE [--server URL] [--output FILE] SCAN FINDING...")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var a apiclient.Adoption
	if *tokenFile != "" {
		var err error
		if a, err = apiclient.New(*server, *tokenFile, nil).Adopt(ctx, pos[0], pos[1:]); err != nil {
			fmt.Fprintf(stderr, "driftwatch: adopt %s on %s: %v\n", pos[0], redactedURL(*server), err)
			return report.ExitError
		}
	} else {
		logger, err := newLogger(stderr, *logLevel, "text")
		if err != nil {
			fmt.Fprintf(stderr, "driftwatch: %v\n", err)
			return report.ExitError
		}
		cfg, loaded := loadConfig(*cfgPath, stderr)
		if !loaded {
			return report.ExitError
		}
		out, err := app.Adopt(ctx, cfg, pos[0], pos[1:], logger)
		if err != nil {
			fmt.Fprintf(stderr, "driftwatch: adopt %s: %v\n", pos[0], err)
			return report.ExitError
		}
		a = apiclient.Adoption{Proven: out.Proven, Missing: out.Missing, Remaining: out.Remaining}
		for _, x := range out.Adoptions {
			a.Adopted = append(a.Adopted, apiclient.AdoptedResource{Finding: x.Finding})
		}
		if out.Proven {
			a.File = out.File()
		}
	}
	return printAdopt(a, pos[0], *output, stdout, stderr)
}

// printAdopt prints a as stderr lines and its file to output (or stdout),
// and returns the exit code.
func printAdopt(a apiclient.Adoption, scan, output string, stdout, stderr io.Writer) int {
	if a.Error != "" {
		fmt.Fprintf(stderr, "driftwatch: adopt %s: %s\n", scan, a.Error)
		return report.ExitError
	}
	for _, x := range a.Adopted {
		fmt.Fprintf(stderr, "adopting  %s\n", x.Finding)
	}
	for _, m := range a.Missing {
		fmt.Fprintf(stderr, "missing   %s: the scan no longer lists it\n", m)
	}
	if !a.Proven {
		fmt.Fprintln(stderr, "not proven: a plan of the generated configuration does more than import:")
		for _, r := range a.Remaining {
			fmt.Fprintf(stderr, "  %s\n", r)
		}
		return report.ExitChanges
	}
	fmt.Fprintln(stderr, "proven: a plan of the generated configuration imports them and changes nothing else")
	if err := writeOutput(output, stdout, func(w io.Writer) error {
		_, err := io.WriteString(w, a.File)
		return err
	}); err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	return report.ExitClean
}
