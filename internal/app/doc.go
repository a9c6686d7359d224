// Package app is the composition root: it turns a loaded config into
// running parts, wires them together, starts them and stops them. Only
// cmd/driftwatch imports it, and, tests aside, it is the only importer of
// runner/local, store/sqlite, notify/notifiers, outbox, server and
// remediation.
//
// What it owns:
//
//   - Loading for the commands: LoadConfig and DiscoverGit (inventory's),
//     Validate (the constructors that open no connection) and Audit, the
//     one-shot audit (pipeline.Targets, local runner, pipeline.Auditor,
//     report.Report).
//   - The daemon (RunDaemon, newDaemon): the store's lock (leader), the
//     sandbox mode, the store, the inventory (inventory.Watcher: config,
//     targets and alert plans as one snapshot, and the reload loop), the
//     runner (local, or Kubernetes Jobs with their result Receiver),
//     metrics, notifiers and the outbox, the run lifecycle (run.Manager),
//     the remediation controller, the silences (silence.Service) and the
//     HTTP server, run under one errgroup until ctx ends; --once is
//     run.Manager.Pass and the audit exit code.
//   - MigrateStore (migrate --to postgres): the SQLite store, under its
//     lock, copied into the configured PostgreSQL one (store/sqlite CopyTo).
//   - When the daemon leads (lead): always on SQLite, while it holds the
//     Lease, or (PostgreSQL without the Lease) the store's lock (Lead);
//     in kubernetes mode it first adopts the Jobs a previous daemon left
//     (kube.go: kube.NewMode's parts joined to the run lifecycle), then has the run lifecycle recover the runs a previous
//     process left, reloads the silences, then schedules and starts the
//     silences' release loop and the remediation loop.
//   - The adapters the other packages see the daemon through: control
//     (server.Control, mapping run, scheduler and leader errors onto the
//     server's; server.SilenceControl is silence.Service.Control),
//     remediationHost (remediation.Host), incidents (run.Incidents: the
//     current alert plan's outcome; the outbox woken after the commit),
//     notifierSet (inventory.Notifiers), and Slack's interactivity handler
//     (slackinteract: its verifiers FromSpecs, its audit entries
//     DecisionAudit and RefusalAudit; audit.go picks the recorders).
//   - The pod entry points (RunInPod, ReportFromPod) and Harden.
//
// What it must not touch: it decides nothing that its parts own and runs
// no loop of its own (reload is inventory's, the release of held messages
// silence's, retention run's). It does not parse flags or format output
// (cmd/driftwatch, report), call the daemon's API (apiclient), read trees
// or check sources out (inventory), start Terraform (tfsession), parse or
// classify plans (planparse, policy), decide incidents (incident) or
// remediations (remediation), or route HTTP (server). The depguard rule
// app-wires-only lists what it must not import.
package app
