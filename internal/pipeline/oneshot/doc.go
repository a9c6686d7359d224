// Package oneshot is the run of the commands that check workspaces once,
// locally, without a daemon: `driftwatch audit` (every selected workspace,
// into a report.Report) and the run request `driftwatch accept` hands
// remediation/acceptance (Request).
//
// What it owns: Options and Audit, which expands the config's git
// discover: entries (Options.Discover: app hands it inventory's), selects
// the workspaces (pipeline.Filter), resolves terraform.sandbox (sandbox.Resolve: it warns
// when runs are not isolated), builds the targets (pipeline.Targets), runs
// them with runner/local through pipeline.Auditor.RunAll, shows progress
// (report.Progress) and returns the report with each workspace's source
// directory and, with grouping.enabled, the groups of findings that
// share a cause (report.Report.GroupFindings). Request builds one workspace's request the same way (the
// same discovery, request, jail and network).
//
// What it must not touch: the store, notifiers, the server, the daemon's
// parts (internal/run, leader), inventory (discovery is handed in: the
// inventory's folder imports pipeline) and app, which forwards to it.
// Printing the report is cmd/driftwatch's (through report).
package oneshot
