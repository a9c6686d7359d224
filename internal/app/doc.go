// Package app is the composition root: it turns a loaded config into
// running parts, wires them together, starts them and stops them. Only
// cmd/driftwatch imports it.
//
// What it keeps, each a list of parts and how they connect:
//
//   - For the commands: LoadConfig and DiscoverGit (inventory's), Validate
//     (the constructors that open no connection), Audit and Accept
//     (pipeline/oneshot),
//     MigrateStore (sqlite.MigrateConfigured under leader.ClaimStore), the
//     pod entry points (RunInPod, ReportFromPod: runner/remote with
//     runner/local) and Harden.
//   - The daemon (RunDaemon, newDaemon): the store's lock
//     (leader.ClaimAtStart), the store, the runner (local, or Kubernetes
//     Jobs: kube.NewMode from runner.kubernetes) and its isolation, the
//     inventory, metrics, the remediation controller, notifiers and the
//     outbox, the run lifecycle, the silences and the HTTP server with
//     Slack's interactivity handler (slackinteract.NewAudited), run under
//     one errgroup until ctx ends, while leading through leader.Campaign
//     or leader.HoldLock; --once is run.Manager.Pass and the audit exit
//     code.
//   - What the parts see of each other: lead hands run.Manager.Lead the
//     store lock (leader.ClaimWhenLeading), the Jobs (kube.Runner.Jobs),
//     the silences and the loops; control is server.DaemonControl made of
//     the parts; remediationHost (remediation.Host) and mayApply join the
//     controller to the inventory, the runs and the kubernetes mode.
//
// What it must not touch: it decides nothing that its parts own, maps no
// error (each part declares its refusals: schedule/refusal) and runs no
// loop of its own. It does not parse flags or format output
// (cmd/driftwatch, report), call the daemon's API (apiclient), read trees
// or check sources out (inventory), start Terraform (tfsession), parse or
// classify plans (planparse, policy), decide incidents or remediations, or
// route HTTP (server). The depguard rule app-wires-only lists what it must
// not import; docs/architecture/daemon.md says where each part lives.
package app
