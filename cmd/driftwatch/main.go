package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/version"
)

func main() {
	// Processes of the same user (Terraform code of an unjailed run) must
	// not read this process's environment or memory through /proc.
	if err := app.Harden(); err != nil {
		fmt.Fprintf(os.Stderr, "driftwatch: cannot make the process non-dumpable: %v\n", err)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `driftwatch finds Terraform/OpenTofu drift.

Usage:
  driftwatch daemon   --config FILE     run always-on: scheduler, store, status page, API, metrics
  driftwatch validate --config FILE     check the config and inventory, run nothing
  driftwatch inventory --config FILE    list every workspace, configured or discovered (--format table|yaml)
  driftwatch audit    --config FILE     run every workspace once and report
  driftwatch approve  ID --token-file F approve a pending remediation (--server URL, default http://127.0.0.1:8080)
  driftwatch reject   ID --token-file F reject a pending or approved remediation
  driftwatch logs     RUN_ID [--follow] print a run's log from a running daemon (--server URL, --token-file F)
  driftwatch cancel   RUN_ID --token-file F  cancel a queued run, or stop a running one (SIGINT / Job deleted)
  driftwatch run      WORKSPACE --token-file F [--follow | --wait]  queue a run on the daemon now; with
                      --follow (log) or --wait (summary), exit with its verdict's code
  driftwatch silence  WORKSPACE | --label k=v --for 4h --comment "why" --token-file F
                      hold a workspace's notifications (checks go on); --list shows silences
                      and maintenance windows, --expire ID ends one early
  driftwatch groups   [--all] [--token-file F]  list the daemon's group incidents (drift of several
                      workspaces with one cause, alerted as one); groups show ID: one, with its members
  driftwatch runner   --spec F --socket S        run one run in a Kubernetes Job's pod (started by the daemon)
  driftwatch runner   report --spec F --socket S its reporter container: posts the runner's result
  driftwatch accept   WORKSPACE [ADDRESS...] --config FILE
                      the code change that accepts a workspace's drift, proven by a plan of
                      the changed code, as a unified diff (--output FILE; exit 0 proven, 2 not)
  driftwatch adopt    SCAN FINDING... --config FILE
                      import blocks and configuration for a scan's unmanaged resources (their
                      finding addresses), proven by a plan that imports them and does nothing
                      else (--output FILE; exit 0 proven, 2 not)
  driftwatch migrate  --to postgres --config FILE  copy the SQLite store (store.path) into the
                      PostgreSQL one (store.dsn_file) and verify the counts; the daemon stopped
  driftwatch version                    print the version

Run "driftwatch COMMAND -h" for a command's flags.
Exit codes of audit, and of run --follow/--wait: 0 clean, 2 drift/pending/forbidden,
1 error (for run also: cancelled, interrupted, --timeout, Ctrl-C).
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return report.ExitError
	}
	switch args[0] {
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "audit":
		return auditCmd(args[1:], stdout, stderr)
	case "daemon":
		return daemonCmd(args[1:], stderr)
	case "approve", "reject":
		return decideCmd(args[0], args[1:], stdout, stderr)
	case "runner":
		return runnerCmd(args[1:], stderr)
	case "logs":
		return logsCmd(args[1:], stdout, stderr)
	case "cancel":
		return cancelCmd(args[1:], stdout, stderr)
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "silence":
		return silenceCmd(args[1:], stdout, stderr)
	case "groups":
		return groupsCmd(args[1:], stdout, stderr)
	case "inventory":
		return inventoryCmd(args[1:], stdout, stderr)
	case "accept":
		return acceptCmd(args[1:], stdout, stderr)
	case "adopt":
		return adoptCmd(args[1:], stdout, stderr)
	case "migrate":
		return migrateCmd(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "driftwatch %s (%s)\n", version.Version, version.Commit)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "driftwatch: unknown command %q\n\n%s", args[0], usage)
	return report.ExitError
}

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return report.ExitError
	}
	if err := app.Validate(cfg, slog.New(slog.DiscardHandler)); err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	fmt.Fprintf(stdout, "%s: ok, %d workspaces (%s)\n", cfg.File, len(cfg.Workspaces), strings.Join(workspaceNames(cfg), ", "))
	if cfg.HasGitDiscovery() {
		// validate reads no network: git sources are checked out by
		// audit, the daemon and inventory.
		fmt.Fprintln(stdout, "git discover: entries are not expanded by validate (no checkout); `driftwatch inventory` lists their workspaces")
	}
	return 0
}

func auditCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	var names, labels listFlag
	fs.Var(&names, "workspace", "only this workspace (repeatable, or comma-separated)")
	fs.Var(&labels, "label", "only workspaces with this label, key=value (repeatable; all must match)")
	concurrency := fs.Int("concurrency", 4, "workspaces run at once")
	format := fs.String("format", "table", "report format: "+strings.Join(report.Formats, ", "))
	output := fs.String("output", "", "write the report to this file instead of stdout")
	logLevel := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	strict := fs.Bool("strict", false, "exit 2 on state-backend findings too")
	cacheDir := fs.String("cache-dir", "", "keep each workspace's initialised working directory here between audits (skips init when nothing changed)")
	github := fs.Bool("github", os.Getenv(report.EnvGitHubActions) == "true",
		"GitHub Actions: annotate each finding and append the Markdown report to $"+report.EnvStepSummary+" (default true when $"+report.EnvGitHubActions+" is true)")
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "driftwatch: unexpected argument %q\n", fs.Arg(0))
		return report.ExitError
	}
	if !validFormat(*format) {
		fmt.Fprintf(stderr, "driftwatch: unknown format %q (use one of %s)\n", *format, strings.Join(report.Formats, ", "))
		return report.ExitError
	}
	if *concurrency < 1 {
		fmt.Fprintln(stderr, "driftwatch: --concurrency must be at least 1")
		return report.ExitError
	}
	logger, err := newLogger(stderr, *logLevel, "text")
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	sel, err := parseLabels(labels)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: --label: %v\n", err)
		return report.ExitError
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return report.ExitError
	}

	cacheAbs := ""
	if *cacheDir != "" {
		if cacheAbs, err = filepath.Abs(*cacheDir); err != nil {
			fmt.Fprintf(stderr, "driftwatch: --cache-dir: %v\n", err)
			return report.ExitError
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := app.Audit(ctx, app.AuditOptions{
		Config: cfg, Filter: app.Filter{Names: names, Labels: sel}, Concurrency: *concurrency,
		Logger: logger, Progress: stderr, ProgressTTY: isTerminal(stderr), CacheDir: cacheAbs,
	})
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	rep.SourceRoot = os.Getenv(report.EnvWorkspace) // empty: the working directory
	if err := writeReport(*output, *format, rep, stdout); err != nil {
		fmt.Fprintf(stderr, "driftwatch: write report: %v\n", err)
		return report.ExitError
	}
	if *github {
		// The runner reads workflow commands on stdout and stderr alike;
		// stderr keeps a machine-readable report on stdout parseable.
		ann := stdout
		if *output == "" && *format != "table" && *format != "markdown" {
			ann = stderr
		}
		if err := report.WriteGitHub(ctx, ann, os.Getenv(report.EnvStepSummary), rep); err != nil {
			fmt.Fprintf(stderr, "driftwatch: --github: %v\n", err)
			return report.ExitError
		}
	}
	return rep.ExitCode(*strict)
}

func daemonCmd(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	once := fs.Bool("once", false, "run every workspace once, record the results and exit with the audit exit code")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := app.RunDaemon(ctx, app.DaemonOptions{ConfigPath: *cfgPath, Logger: logger, Once: *once})
	if err != nil {
		logger.Error("daemon failed", "err", err.Error())
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
	}
	return code
}

// migrateCmd is `driftwatch migrate --to postgres --config FILE`: it
// copies the SQLite store into PostgreSQL (app.MigrateStore) and prints
// each table's rows.
func migrateCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file: store.driver postgres, store.dsn_file the destination, store.path the SQLite file to copy")
	to := fs.String("to", "", "the destination driver: postgres")
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	if *to != config.StorePostgres || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "driftwatch: usage: driftwatch migrate --to postgres [--config FILE]")
		return report.ExitError
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return report.ExitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	counts, err := app.MigrateStore(ctx, cfg, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	var total int64
	for _, c := range counts {
		fmt.Fprintf(stdout, "%-16s %d\n", c.Table, c.Rows)
		total += c.Rows
	}
	fmt.Fprintf(stdout, "copied %d rows of %d tables from %s; the counts match\n", total, len(counts), cfg.Store.Path)
	return 0
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: unknown format %q (use json or text)", format)
}

func validFormat(f string) bool {
	for _, x := range report.Formats {
		if f == x {
			return true
		}
	}
	return false
}

// writeReport writes atomically when --output is set, so a reader never
// sees half a report.
// loadConfig loads the config file at path (app.LoadConfig); when it is
// invalid it says why on stderr and ok is false.
func loadConfig(path string, stderr io.Writer) (cfg *config.Config, ok bool) {
	cfg, err := app.LoadConfig(path)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: invalid config:\n%v\n", err)
		return nil, false
	}
	return cfg, true
}

func writeReport(path, format string, rep *report.Report, stdout io.Writer) error {
	return writeOutput(path, stdout, func(w io.Writer) error { return report.Write(w, format, rep) })
}

// writeOutput writes with write to stdout, or, when path is set, to a
// temporary file beside path renamed over it once complete.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(dirOf(path), ".driftwatch-output-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return "."
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// parseLabels parses "k=v" selectors.
func parseLabels(sel []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range sel {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid label selector %q (want key=value)", s)
		}
		out[k] = v
	}
	return out, nil
}

// workspaceNames lists the config's workspace names, sorted.
func workspaceNames(cfg *config.Config) []string {
	var n []string
	for _, w := range cfg.Workspaces {
		n = append(n, w.Name)
	}
	sort.Strings(n)
	return n
}
