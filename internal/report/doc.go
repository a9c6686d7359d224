// Package report renders audit results for people and machines: a table,
// JSON (the documented contract, version 1), Markdown and JUnit XML, plus the
// progress display and the audit exit code. It only sees value-free
// drift.Results, so no output format can leak an attribute value.
//
// It owns the report's shape (Report, Summary, Workspace), its formats
// (Write, Formats), the exit codes of `driftwatch audit` (ExitClean,
// ExitChanges, ExitError, Report.ExitCode: 0 clean, 2 drift, pending or
// forbidden, 1 error) and Progress, an audit.Observer that writes to the
// io.Writer it is given.
//
// It writes only to the writers it is handed: no files, flags or signals
// (cmd/driftwatch owns those). It imports only drift of driftwatch's
// packages and must not import audit, runner, store, config or app.
package report
