// Package app is the composition root: it turns a loaded config into
// running parts, wires them together, starts them and stops them. Only
// cmd/driftwatch imports it, and, tests aside, it is the only importer of
// runner/local, store/sqlite, the notifier implementations (notify/slack,
// notify/opsgenie, notify/pagerduty, notify/webhook), outbox, server and
// remediation.
//
// What it owns:
//
//   - Wiring: Targets maps config workspaces onto pipeline.Target (a
//     terraform.Request with every known secret to redact, policy rules);
//     Validate runs the constructors that open no connection; Audit is the
//     one-shot audit (local runner, pipeline.Auditor, report.Report).
//   - The daemon (RunDaemon, newDaemon): the store's lock (leader), the
//     sandbox mode, the store, the runner (local, or Kubernetes Jobs with
//     their result Receiver), metrics, notifiers and the outbox, the run
//     lifecycle (run.Manager, which owns the scheduler), the remediation
//     controller and the HTTP server, run under one errgroup until ctx
//     ends; --once does one pass and returns the audit exit code.
//   - When the daemon leads (lead): always, or while it holds the Lease
//     (leader.State.Campaign); in kubernetes mode it first adopts the Jobs
//     a previous daemon left (kube.go), then has the run lifecycle recover
//     the runs a previous process left, then schedules. Config reload on
//     SIGHUP or a file change (an invalid config keeps the old one).
//   - The adapters the other packages see the daemon through: control
//     (server.Control, mapping run, scheduler and leader errors onto the
//     server's) and remediationHost (remediation.Host); the alert plans
//     (incident policy and notifier routes per workspace) the run
//     lifecycle records outcomes with.
//   - The pod entry points (RunInPod, ReportFromPod) and Harden.
//
// What it must not touch: it decides nothing that its parts own. It does
// not parse flags or format output (cmd/driftwatch, report), call the
// daemon's API (apiclient), start Terraform (tfsession), record runs
// (run), decide who leads (leader), parse or classify plans (planparse,
// policy), decide incidents (incident), deliver notifications (outbox),
// route HTTP (server) or decide remediations (remediation). It must not
// import apiclient, tfsession, planparse or policy.
package app
