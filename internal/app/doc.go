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
//     sandbox mode, the store, the inventory, the runner (local, or
//     Kubernetes Jobs: kube.NewMode), metrics, notifiers and the outbox,
//     the run lifecycle (run.Manager), the remediation controller, the
//     silences and the HTTP server, run under one errgroup until ctx
//     ends; --once is run.Manager.Pass and the audit exit code.
//   - What the parts see of each other: lead hands run.Manager.Lead the
//     store lock, the Jobs (kubeJobs), the silences and the remediation
//     loop; control is server.DaemonControl made of the parts;
//     remediationHost (remediation.Host), notifierSet
//     (inventory.Notifiers) and Slack's interactivity handler
//     (slackinteract) join two parts each.
//   - The pod entry points (RunInPod, ReportFromPod) and Harden.
//
// What it must not touch: it decides nothing that its parts own, maps no
// error (each part's errors are the server's refusals where they are
// declared: schedule/refusal) and runs no loop of its own. It does not
// parse flags or format output (cmd/driftwatch, report), call the
// daemon's API (apiclient), read trees or check sources out (inventory),
// start Terraform (tfsession), parse or classify plans (planparse,
// policy), decide incidents or remediations, or route HTTP (server). The
// depguard rule app-wires-only lists what it must not import. What moved
// out, and where: docs/architecture/daemon.md.
package app
