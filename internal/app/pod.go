package app

import (
	"context"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Harden makes this process non-dumpable: processes of the same user
// (Terraform code of an unjailed run) can then neither ptrace it nor read
// its environment or memory through /proc. Every driftwatch command calls
// it first.
func Harden() error { return sandbox.SetNonDumpable() }

// RunInPod is the runner container of a Kubernetes run Job: it runs the
// spec's run (a detection with the local runner, or a remediation's apply)
// and hands the result to the reporter over socket. It has no token.
func RunInPod(ctx context.Context, logger *slog.Logger, specPath, socket string) error {
	return remote.RunInPod(ctx, specPath, socket, local.New(logger), remote.Apply(logger))
}

// ReportFromPod is the reporter container of a Kubernetes run Job: the
// only one with the run's token, it takes the runner's result over socket
// and delivers it to the daemon.
func ReportFromPod(ctx context.Context, logger *slog.Logger, specPath, socket string) error {
	return (&remote.Reporter{Logger: logger}).Report(ctx, specPath, socket)
}
