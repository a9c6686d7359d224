package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as a Go duration string ("10m").
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("invalid duration %q", n.Value)
	}
	*d = Duration(v)
	return nil
}

// WaitDuration is a Duration that may be zero ("0s": do not wait), for
// settings where zero is a choice, not a mistake (remediation.lock_timeout).
type WaitDuration Duration

// UnmarshalYAML parses a Go duration string.
func (d *WaitDuration) UnmarshalYAML(n *yaml.Node) error { return (*Duration)(d).UnmarshalYAML(n) }

// Config is the whole driftwatch configuration file.
type Config struct {
	// Include lists glob patterns of inventory fragments (files holding only
	// a `workspaces:` list), relative to this file.
	Include   []string  `yaml:"include"`
	Terraform Terraform `yaml:"terraform"`
	Server    Server    `yaml:"server"`
	Store     Store     `yaml:"store"`
	// MaxConcurrentRuns caps the daemon's simultaneous runs (default 4).
	MaxConcurrentRuns int `yaml:"max_concurrent_runs"`
	// AllowSubMinuteSchedules permits "@every" below one minute (demos, tests).
	AllowSubMinuteSchedules bool `yaml:"allow_sub_minute_schedules"`
	// Notifiers are the named alert destinations; Alerts routes incidents to them.
	Notifiers []Notifier `yaml:"notifiers"`
	Alerts    Alerts     `yaml:"alerts"`
	// ConcurrencyGroups cap the runs at once of workspaces that share a
	// label's value, and back such a group off when its plans are
	// throttled (concurrency.go).
	ConcurrencyGroups []ConcurrencyGroup `yaml:"concurrency_groups"`
	// MaintenanceWindows hold notifications on a schedule (maintenance.go).
	MaintenanceWindows []MaintenanceWindow `yaml:"maintenance_windows"`
	// Remediation is the daemon-wide remediation switch.
	Remediation RemediationSwitch `yaml:"remediation"`
	// Accept is how drift accepted as code is proposed (accept.go).
	Accept Accept `yaml:"accept"`
	// AttributionByLabel sets the attribution command of the workspaces
	// carrying some labels (attribution.go).
	AttributionByLabel []LabelAttribution `yaml:"attribution_by_label"`
	// Grouping alerts drift that shares one cause across workspaces as
	// one group incident (grouping.go).
	Grouping   Grouping    `yaml:"grouping"`
	Defaults   Defaults    `yaml:"defaults"`
	Workspaces []Workspace `yaml:"workspaces"`
	// Discover entries expand into workspaces, one per root module found
	// in a tree (discover.go).
	Discover []Discover `yaml:"discover"`
	// Scans list what exists through Terraform's list blocks and compare
	// it with every workspace's state (scan.go): each is a workspace of
	// its own (Workspace.Scan).
	Scans []Scan `yaml:"scans"`
	// Runner selects where runs execute (runner.go).
	Runner Runner `yaml:"runner"`

	// File is the absolute path the config was loaded from.
	File string `yaml:"-"`
	// gitDiscovered is set once DiscoverGit has added the git discover:
	// entries' workspaces, so that a second call adds nothing.
	gitDiscovered bool
}

// Terraform configures how Terraform/OpenTofu is executed.
type Terraform struct {
	// Binary is "terraform", "tofu", or a path. Empty: terraform, then tofu, from PATH.
	Binary string `yaml:"binary"`
	// CLIConfigFile is passed as TF_CLI_CONFIG_FILE to every run.
	CLIConfigFile string `yaml:"cli_config_file"`
	// PluginCacheDir is a provider cache shared by all runs; driftwatch
	// serialises `init` on it (Terraform's cache is not safe under concurrent
	// init: two inits writing one entry tear it). Empty disables the cache.
	PluginCacheDir string `yaml:"plugin_cache_dir"`
	// WorkDir is where per-run temporary directories are created (default: the OS temp dir).
	WorkDir string `yaml:"work_dir"`
	// GitCacheDir caches git sources between runs (default: the user cache dir).
	GitCacheDir string `yaml:"git_cache_dir"`
	// KillGrace is how long Terraform gets after SIGINT before it is killed.
	KillGrace Duration `yaml:"kill_grace"`
	// Sandbox isolates local runs from the daemon and from each other with
	// Linux namespaces (bubblewrap): "auto" (default: where the machine
	// allows it, else a warning at start-up and in /api/v1/status),
	// "namespaces" (refuse to start without it) or "off".
	Sandbox string `yaml:"sandbox"`
	// SandboxPaths are host paths made visible (read-write) inside the
	// sandbox of every local run: what the workspaces' code must reach on
	// this machine, such as files a local provider manages.
	SandboxPaths []string `yaml:"sandbox_paths"`
	// SandboxNetwork is the sandbox's network: "auto" (default: a network
	// namespace of the run's own with outbound access only, through
	// pasta, where the machine allows it, else the host's network with a
	// warning at start-up and in /api/v1/status), "isolated" (refuse to
	// start without it) or "host" (the host's network: workspaces' code
	// reaches every port of this machine, the daemon's own included).
	SandboxNetwork string `yaml:"sandbox_network"`
	// SandboxHostPorts are the host's loopback ports ("127.0.0.1:6443")
	// every local run may reach from its network namespace, at the same
	// address: a local cluster's API server, a local state backend.
	SandboxHostPorts []string `yaml:"sandbox_host_ports"`
	// FastPaths (default true) lets a check skip work that cannot change
	// its verdict: show -json after a plan that found nothing (the
	// summary comes from the plan file), and, in the daemon, init when
	// nothing init depends on changed since the workspace's last
	// successful run (a kept working directory). false: every check
	// inits in a fresh directory and runs show -json.
	FastPaths *bool `yaml:"fast_paths"`
}

// FastPathsOn reports terraform.fast_paths (default true).
func (t Terraform) FastPathsOn() bool { return t.FastPaths == nil || *t.FastPaths }

// Server configures the daemon's HTTP server.
type Server struct {
	// Listen is the address of the status page, API and metrics (default 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// TokenFile holds the API token with the admin role (named "api"):
	// every mutating call, and every read. More tokens, with other roles,
	// are server.auth.tokens.
	TokenFile string `yaml:"token_file"`
	// ReadTokenFile holds an optional token with the viewer role (named
	// "read"): it reads run logs and run pages, never calls a mutating
	// endpoint.
	ReadTokenFile string `yaml:"read_token_file"`
	// MetricsTokenFile holds a token that may read /metrics and nothing
	// else (named "metrics"): Prometheus' scrape credential, as a bearer
	// token. /metrics follows the role rules: it is open when a caller
	// without a credential may read (token mode's default,
	// anonymous_role: viewer), and otherwise needs the viewer role or
	// this token.
	MetricsTokenFile string `yaml:"metrics_token_file"`
	// OpenReads serves every read, run logs and run pages too, without a
	// credential: server.auth.anonymous_role viewer (a log holding
	// attribute values, log_plan_text, still needs one).
	OpenReads bool `yaml:"open_reads"`
	// AllowedHosts are host names the server answers to besides localhost,
	// IP literals and the hosts of external_url and the Kubernetes
	// runner's callback_url (DNS rebinding); "*.example.com" allows its
	// subdomains.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// ExternalURL is the status page's public base URL, used in links.
	ExternalURL string `yaml:"external_url"`
	// TLSCertFile and TLSKeyFile (PEM; both or neither) make the server
	// speak HTTPS (TLS 1.2 or later) on Listen. The files are read again
	// when they change, so a renewed certificate needs no restart.
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// Auth is who may do what: the authentication mode, named API tokens
	// with their roles, the trusted proxy and the roles of its identities,
	// and what a caller without a credential may do.
	Auth Auth `yaml:"auth"`
}

// Store configures the daemon's database: an embedded SQLite file (the
// default) or a PostgreSQL database that several replicas share.
type Store struct {
	// Driver is StoreSQLite (default) or StorePostgres.
	Driver string `yaml:"driver"`
	// Path of the SQLite file (default: $XDG_DATA_HOME/driftwatch/driftwatch.db).
	Path string `yaml:"path"`
	// DSNFile holds the PostgreSQL DSN (required with driver postgres):
	// a secret, read at start, never logged.
	DSNFile string `yaml:"dsn_file"`
	// KeepRuns is how many runs per workspace are kept (default 200).
	KeepRuns int `yaml:"keep_runs"`
	// MaxAge drops runs older than this (default 0: no age limit).
	MaxAge Duration `yaml:"max_age"`
	// MaxLogBytes bounds each run's stored log: its head and tail are kept
	// (default 1 MiB).
	MaxLogBytes int `yaml:"max_log_bytes"`
}

// Where names the store for logs: the SQLite file, or PostgreSQL without
// its DSN (a secret).
func (s Store) Where() string {
	if s.Driver == StorePostgres {
		return "postgres (store.dsn_file)"
	}
	return s.Path
}

// Store drivers.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// Daemon defaults.
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultMaxConcurrentRuns = 4
	DefaultKeepRuns          = 200
	DefaultMaxLogBytes       = 1 << 20
	DefaultSchedule          = "@hourly"
)

// LoadFile reads, strictly decodes and validates the config at path,
// including its `include:` fragments. Every error names file, line and
// key. Its discover: entries are validated, not expanded (LoadFileWith).
func LoadFile(path string) (*Config, error) { return LoadFileWith(path, nil) }

// LoadFileWith is LoadFile that also expands the discover: entries with a
// local source, with find: their workspaces are validated with the
// configured ones.
func LoadFileWith(path string, find Finder) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return load(abs, data, find)
}

// Load decodes and validates config data that was read from file (used for
// relative paths and error messages), as LoadFile does.
func Load(file string, data []byte) (*Config, error) { return load(file, data, nil) }

func load(file string, data []byte, find Finder) (*Config, error) {
	node, err := parseDocument(file, data)
	if err != nil {
		return nil, err
	}
	cfg := &Config{}
	pos, err := decodeStrict(file, node, cfg)
	if err != nil {
		return nil, err
	}
	cfg.File = file
	for i := range cfg.Workspaces {
		cfg.Workspaces[i].pos, cfg.Workspaces[i].prefix = pos, fmt.Sprintf("workspaces[%d]", i)
	}
	if err := cfg.loadIncludes(pos); err != nil {
		return nil, err
	}
	// Discovered workspaces are validated with the configured ones.
	derr := cfg.expandDiscover(context.Background(), pos, find)
	// Scans last: at start they queue after the workspaces they compare.
	serr := cfg.expandScans(pos)
	if err := errors.Join(append(serr, derr, cfg.validate(pos))...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// fragment is the shape of an included inventory file.
type fragment struct {
	Workspaces []Workspace `yaml:"workspaces"`
}

func (c *Config) loadIncludes(pos *positions) error {
	var errs []error
	dir := filepath.Dir(c.File)
	for i, pat := range c.Include {
		key := fmt.Sprintf("include[%d]", i)
		if !filepath.IsAbs(pat) {
			pat = filepath.Join(dir, pat)
		}
		matches, err := filepath.Glob(pat)
		if err != nil {
			errs = append(errs, pos.errorf(key, "invalid glob %q: %v", c.Include[i], err))
			continue
		}
		if len(matches) == 0 {
			errs = append(errs, pos.errorf(key, "no file matches %q", c.Include[i]))
			continue
		}
		sort.Strings(matches)
		for _, m := range matches {
			data, err := os.ReadFile(m)
			if err != nil {
				errs = append(errs, pos.errorf(key, "read include: %v", err))
				continue
			}
			node, err := parseDocument(m, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			var f fragment
			fpos, err := decodeStrict(m, node, &f)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for j := range f.Workspaces {
				f.Workspaces[j].pos, f.Workspaces[j].prefix = fpos, fmt.Sprintf("workspaces[%d]", j)
			}
			c.Workspaces = append(c.Workspaces, f.Workspaces...)
		}
	}
	return errors.Join(errs...)
}
