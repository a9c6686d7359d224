// Package report renders audit results for people and machines: a table,
// JSON (the documented contract, version 1), Markdown, JUnit XML, SARIF
// 2.1.0 (WriteSARIF) and GitHub Actions annotations plus the step summary
// (WriteGitHub), plus the progress display and the audit exit code. It only sees value-free
// drift.Results, so no output format can leak an attribute value.
//
// It owns the report's shape (Report, Summary, Workspace, Group), its formats
// (Write, Formats), the exit codes of `driftwatch audit` (ExitClean,
// ExitChanges, ExitError, Report.ExitCode: 0 clean, 2 drift, pending or
// forbidden, 1 error) and Progress, an pipeline.Observer that writes to the
// io.Writer it is given.
//
// It writes to the writers it is handed, with one exception: WriteGitHub
// appends to the step summary file it is given. It reads a workspace's
// configuration files (through source.Locator, a static read that keeps
// no values) to locate SARIF results and annotations. It takes no flags
// and handles no signals (cmd/driftwatch owns those). Of driftwatch's
// packages it imports only drift, source, version and incident/group
// (Report.GroupFindings: the findings of several workspaces that share a
// cause); it must not import pipeline, runner, store, config or app.
package report
