// Command driftwatch finds Terraform/OpenTofu drift.
//
//	driftwatch validate --config FILE
//	driftwatch inventory --config FILE [--format table|yaml]
//	driftwatch audit    --config FILE [--workspace NAME]... [--label k=v]... [--concurrency N]
//	                    [--format table|json|markdown|junit] [--output FILE] [--strict] [--cache-dir DIR]
//	driftwatch daemon   --config FILE [--once] [--log-level L] [--log-format json|text]
//	driftwatch run      WORKSPACE --token-file FILE [--follow | --wait] [--timeout D] [--format text|json]
//	driftwatch logs     RUN_ID [--follow] [--token-file FILE]
//	driftwatch cancel   RUN_ID --token-file FILE
//	driftwatch approve  ID --token-file FILE [--hash H]
//	driftwatch reject   ID --token-file FILE
//	driftwatch silence  WORKSPACE | --label k=v... --for D --comment TEXT --token-file FILE [--starts-at T] [--by WHO]
//	driftwatch silence  --list [--format text|json]
//	driftwatch silence  --expire ID --token-file FILE [--by WHO]
//	driftwatch groups   [--all] [--format text|json] [--token-file FILE]
//	driftwatch groups   show ID [--format text|json] [--token-file FILE]
//	driftwatch runner   [report] --spec FILE --socket PATH   (a Kubernetes run Job's containers)
//	driftwatch migrate  --to postgres [--config FILE]
//	driftwatch version
//
// This package owns flags (one flag.FlagSet per command), output text,
// exit codes (audit, and run --follow/--wait: 0 clean, 2 drift, pending or
// forbidden, 1 error) and signal handling (SIGINT and SIGTERM cancel the
// command's context). Everything else is a call: validate, audit, daemon
// and runner go through internal/app (app.Harden first, for every
// command); migrate calls app.MigrateStore; inventory prints what app.LoadConfig and
// app.DiscoverGit expand; the commands that call a running daemon (run, logs, cancel,
// approve, reject, silence, groups) go through internal/apiclient; reports are
// written by internal/report.
//
// It must not import driftwatch packages other than app, apiclient,
// config, report and version, and keeps no logic beyond parsing and
// printing: no HTTP client, no runner, store, scheduler or server of its
// own.
package main
