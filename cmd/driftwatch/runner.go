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

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/report"
)

// runnerCmd is the command of a run Job's two containers (runner.mode
// kubernetes):
//
//	driftwatch runner --spec PATH --socket PATH         the runner container
//	driftwatch runner report --spec PATH --socket PATH  the reporter container
//
// The runner runs the spec's run with the local runner (or, for a
// remediation Job, applies the approved change set with
// engine.Applier, if the daemon says right before the apply that the
// kill switch is off) and hands the result to the reporter over the unix
// socket; it has no token. The reporter, the only container with the
// run's token, takes the result over and delivers it to the daemon. Each
// exits 1 only when the spec is unusable or its part of the delivery
// failed (a 409 from the daemon included: someone else posted a result
// for the run first).
func runnerCmd(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "report" {
		return reporterCmd(args[1:], stderr)
	}
	spec, socket, ok := runnerFlags("runner", args, stderr)
	if !ok {
		return report.ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := app.RunInPod(ctx, logger, spec, socket); err != nil {
		fmt.Fprintln(stderr, err)
		return report.ExitError
	}
	return 0
}

// reporterCmd is `driftwatch runner report`.
func reporterCmd(args []string, stderr io.Writer) int {
	spec, socket, ok := runnerFlags("runner report", args, stderr)
	if !ok {
		return report.ExitError
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// SIGTERM (the pod is stopping) does not stop the reporter: the runner
	// cuts its run short and hands that result over, and it is delivered
	// until the spec's deadline or the kubelet's kill.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			logger.Info("SIGTERM: still delivering what the runner hands over")
		}
	}()
	if err := app.ReportFromPod(context.Background(), logger, spec, socket); err != nil {
		fmt.Fprintln(stderr, err)
		return report.ExitError
	}
	return 0
}

// runnerFlags parses both roles' flags: --spec and --socket, both required.
func runnerFlags(name string, args []string, stderr io.Writer) (spec, socket string, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&spec, "spec", "", "run spec file (mounted from the run's Secret)")
	fs.StringVar(&socket, "socket", "", "the reporter's unix socket (in the directory the pod's two containers share)")
	if err := fs.Parse(args); err != nil {
		return "", "", false
	}
	if spec == "" || socket == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "driftwatch %s: usage: driftwatch %s --spec FILE --socket PATH\n", name, name)
		return "", "", false
	}
	return spec, socket, true
}
