// Package oneshot is the `driftwatch audit` command's run: every selected
// workspace once, with the local runner, into a report.Report.
//
// What it owns: Options and Audit, which expands the config's git
// discover: entries (inventory.DiscoverGit), selects the workspaces
// (pipeline.Filter), resolves terraform.sandbox (sandbox.Resolve: it warns
// when runs are not isolated), builds the targets (pipeline.Targets), runs
// them with runner/local through pipeline.Auditor.RunAll, shows progress
// (report.Progress) and returns the report with each workspace's source
// directory.
//
// What it must not touch: the store, notifiers, the server, the daemon's
// parts (internal/run, leader) and app, which forwards to it (app.Audit).
// Printing the report is cmd/driftwatch's (through report).
package oneshot
