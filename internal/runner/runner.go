package runner

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// Runner executes one workspace run: init, plan -detailed-exitcode -out, show -json.
type Runner interface {
	Run(ctx context.Context, req terraform.Request) (Result, error)
}

// Adopted is a run whose Job a previous daemon left running, as a runner
// that adopts Jobs (runner/kube) hands it to the run lifecycle
// (run.Jobs), which awaits it.
type Adopted struct {
	Workspace string
	RunID     string
	Job       string
	// Remediation marks an apply's Job: RunID is the apply's run (kept
	// running by Recover; remediation finishes it with the outcome), and
	// the run awaited is the verification detection that follows
	// (trigger "adopted").
	Remediation bool
	// Runner's one run is the Job's outcome (and, for a remediation, the
	// verification after it).
	Runner Runner
}

// Result of a successful run.
type Result struct {
	Plan *planparse.Plan
	// ExitCode is plan's -detailed-exitcode (0 no changes, 2 changes); kept
	// as a coarse signal only, never used to classify.
	ExitCode int
	// Tool names the binary and its version, e.g. "terraform 1.11.4".
	Tool   string
	Commit string // resolved git commit for git sources
	// Providers are the provider versions init selected (the lock file:
	// source address to version), nil when unknown.
	Providers map[string]string
	Phases    []drift.Phase
	// Listed is a scan's result (terraform.Request.Query): every resource
	// its list blocks found, never nil then (an empty list is a result);
	// Plan is nil.
	Listed []drift.Listed
	// Backend holds state-backend hygiene findings (kind backend) from a
	// static read of the root module's backend block.
	Backend []drift.Finding
}
