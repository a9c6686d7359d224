// Package app is the composition root: it turns a loaded config into
// running parts, wires them together, starts them and stops them. Only
// cmd/driftwatch imports it.
//
// What it keeps, each a list of parts and how they connect:
//
//   - For the commands: LoadConfig and DiscoverGit (inventory's), Validate
//     (the constructors that open no connection), Audit (pipeline/oneshot),
//     Accept (oneshot.Request and remediation/acceptance), MigrateStore
//     (sqlite.MigrateConfigured under leader.ClaimStore), the pod entry
//     points (RunInPod, ReportFromPod: runner/remote with runner/local) and
//     Harden.
//   - The daemon (RunDaemon, newDaemon): the store's lock, the store, the
//     runner (local, or Kubernetes Jobs: kube.NewMode) and its isolation,
//     the inventory, metrics, the remediation controller, the acceptances,
//     notifiers and the outbox, the run lifecycle, the silences and the
//     HTTP server with Slack's interactivity handler, run under one
//     errgroup while leading (leader.Campaign or leader.HoldLock); --once
//     is run.Manager.Pass and its exit code.
//   - What the parts see of each other: lead (run.Manager.Lead), control
//     (server.DaemonControl), remediationHost and mayApply.
//
// What it must not touch: it decides nothing its parts own, maps no error
// (each part declares its refusals: schedule/refusal) and runs no loop of
// its own; it parses no flags, formats no output, calls no API, reads no
// tree, starts no Terraform, classifies no plan and routes no HTTP. The
// depguard rule app-wires-only lists what it must not import;
// docs/architecture/daemon.md says where each part lives.
package app
