// Package app is the composition root: it turns a loaded config into
// running parts, wires them together and runs the daemon's lifecycle. Only
// cmd/driftwatch imports it, and, tests aside, it is the only importer of
// runner/local, store/sqlite, the notifier implementations (notify/slack,
// notify/opsgenie, notify/webhook), outbox, server and remediation.
//
// What it owns:
//
//   - Wiring: Targets maps config workspaces onto audit.Target (a
//     runner.Request with every known secret to redact, policy rules);
//     Validate runs the constructors that open no connection; Audit is the
//     one-shot audit (local runner, audit.Auditor, report.Report).
//   - The daemon (RunDaemon): the store's lock (and killing and removing
//     what a SIGKILLed predecessor's runs left), the sandbox mode, the
//     store, the runner (local, or Kubernetes Jobs with their result
//     Receiver), metrics, notifiers and the outbox, the scheduler, the
//     remediation controller and the HTTP server, run under one errgroup
//     until ctx ends; --once does one pass and returns the audit exit code.
//   - The daemon's lifecycle: leading (adopting Jobs a previous daemon
//     left, whose runs keep their ids and are finished when the Job ends;
//     marking the other unfinished runs interrupted and re-running them;
//     scheduling)
//     always or while it holds the leader Lease; config reload on SIGHUP or
//     a file change (an invalid config keeps the old one); run retention.
//   - Recording runs: queued, started, and finished together with the
//     incident decisions and outbox messages in one store transaction
//     (FinishRunWithOutcome), the run's log saved and its followers ended.
//   - The adapters the other packages see the daemon through: control
//     (server.Control, mapping scheduler and run-registry errors onto
//     server's) and remediationHost (remediation.Host).
//   - The pod entry points (RunInPod, ReportFromPod) and Harden.
//
// What it must not touch: it decides nothing that its parts own. It does
// not parse flags or format output (cmd/driftwatch, report), call the
// daemon's API (apiclient), start Terraform (tfsession), parse or classify
// plans (planparse, policy), decide incidents (incident), deliver
// notifications (outbox), route HTTP (server) or decide remediations
// (remediation). It must not import apiclient, tfsession, planparse or
// policy.
package app
