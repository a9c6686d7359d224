package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

// runnerCmd is `driftwatch runner --spec PATH`: the command of a run Job's
// pod (runner.mode kubernetes). It runs the spec's run with the local runner
// (or, for a remediation Job, applies the approved change set with
// remediate.Applier, if the daemon says right before the apply that the
// kill switch is off) and delivers the result to the daemon; it exits 1 only
// when the spec is unusable or the result could not be delivered.
func runnerCmd(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	spec := fs.String("spec", "", "run spec file (mounted from the run's Secret)")
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	if *spec == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "driftwatch runner: usage: driftwatch runner --spec FILE")
		return report.ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := remote.RunInPod(ctx, *spec, local.New(logger), remote.Apply(logger)); err != nil {
		fmt.Fprintln(stderr, err)
		return report.ExitError
	}
	return 0
}
