package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/schedule"
)

// DefaultForbidden is the forbidden resource type list used when neither
// defaults.forbidden nor a workspace's forbidden is set: these belong to
// GitOps (Argo CD), not Terraform.
var DefaultForbidden = []string{"kubernetes_*", "helm_release"}

// DefaultTimeout bounds one workspace run when no timeout is configured.
const DefaultTimeout = 10 * time.Minute

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
	// Remediation is the daemon-wide remediation switch.
	Remediation RemediationSwitch `yaml:"remediation"`
	Defaults    Defaults          `yaml:"defaults"`
	Workspaces  []Workspace       `yaml:"workspaces"`
	// Runner selects where runs execute (runner.go).
	Runner Runner `yaml:"runner"`

	// File is the absolute path the config was loaded from.
	File string `yaml:"-"`
}

// Terraform configures how Terraform/OpenTofu is executed.
type Terraform struct {
	// Binary is "terraform", "tofu", or a path. Empty: terraform, then tofu, from PATH.
	Binary string `yaml:"binary"`
	// CLIConfigFile is passed as TF_CLI_CONFIG_FILE to every run.
	CLIConfigFile string `yaml:"cli_config_file"`
	// PluginCacheDir is a provider cache shared by all runs; driftwatch
	// serialises `init` on it (Terraform's cache is not safe under concurrent
	// init, terraform#31964). Empty disables the cache.
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
}

// Server configures the daemon's HTTP server.
type Server struct {
	// Listen is the address of the status page, API and metrics (default 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// TokenFile holds the bearer token for mutating API calls; without it
	// they are disabled. It also reads run logs and run pages.
	TokenFile string `yaml:"token_file"`
	// ReadTokenFile holds an optional read-only token: it reads run logs
	// and run pages, never calls a mutating endpoint.
	ReadTokenFile string `yaml:"read_token_file"`
	// OpenReads serves run logs and run pages without a credential (a log
	// holding attribute values, log_plan_text, still needs one).
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
}

// Store configures the daemon's embedded database.
type Store struct {
	// Path of the SQLite file (default: $XDG_DATA_HOME/driftwatch/driftwatch.db).
	Path string `yaml:"path"`
	// KeepRuns is how many runs per workspace are kept (default 200).
	KeepRuns int `yaml:"keep_runs"`
	// MaxAge drops runs older than this (default 0: no age limit).
	MaxAge Duration `yaml:"max_age"`
	// MaxLogBytes bounds each run's stored log: its head and tail are kept
	// (default 1 MiB).
	MaxLogBytes int `yaml:"max_log_bytes"`
}

// Notifier is one named alert destination. Secrets come from files.
type Notifier struct {
	Name string `yaml:"name"`
	// Type is slack, opsgenie or webhook.
	Type     string          `yaml:"type"`
	Slack    *SlackConfig    `yaml:"slack"`
	OpsGenie *OpsGenieConfig `yaml:"opsgenie"`
	Webhook  *WebhookConfig  `yaml:"webhook"`
	// Timeout bounds one HTTP request of a delivery (default 10s).
	Timeout Duration `yaml:"timeout"`
	// CAFile adds PEM certificates to trust (private CAs, TLS proxies).
	CAFile string `yaml:"ca_file"`
}

// SlackConfig: bot mode (token_file + channel: one message per incident,
// updated in place, changes in its thread) or webhook mode (webhook_url_file:
// one message per transition).
type SlackConfig struct {
	Mode           string `yaml:"mode"`
	TokenFile      string `yaml:"token_file"`
	Channel        string `yaml:"channel"`
	WebhookURLFile string `yaml:"webhook_url_file"`
	// APIURL overrides https://slack.com/api/ (tests, proxies).
	APIURL string `yaml:"api_url"`
}

// OpsGenieConfig is an OpsGenie API integration.
type OpsGenieConfig struct {
	APIKeyFile string `yaml:"api_key_file"`
	// Region is us (default) or eu.
	Region string `yaml:"region"`
	// APIURL overrides the region's API URL (tests, proxies).
	APIURL string `yaml:"api_url"`
}

// WebhookConfig is a generic signed JSON webhook.
type WebhookConfig struct {
	URLFile    string            `yaml:"url_file"`
	SecretFile string            `yaml:"secret_file"`
	Headers    map[string]string `yaml:"headers"`
}

// Alerts configures incidents and their routing.
type Alerts struct {
	// DefaultNotifiers receive incidents no route matches.
	DefaultNotifiers []string `yaml:"default_notifiers"`
	AlertPolicy      `yaml:",inline"`
	Routes           []Route `yaml:"routes"`
}

// AlertPolicy can be set in alerts and overridden per workspace.
type AlertPolicy struct {
	// IncludePending makes pending (unapplied) changes part of the drift incident.
	IncludePending *bool `yaml:"include_pending"`
	// ConfirmAfter consecutive observations open an incident (default 1).
	ConfirmAfter int `yaml:"confirm_after"`
	// ErroredAfter consecutive errored runs open an errored incident (default 3).
	ErroredAfter int `yaml:"errored_after"`
	// RenotifyAfter re-sends an unchanged open incident (default: never).
	RenotifyAfter Duration `yaml:"renotify_after"`
	// Severity per class: drift, forbidden, errored.
	Severity map[string]string `yaml:"severity"`
}

// Route sends matching workspaces' incidents to notifiers.
type Route struct {
	Match     RouteMatch        `yaml:"match"`
	Notifiers []string          `yaml:"notifiers"`
	Severity  map[string]string `yaml:"severity"`
	// Team is the responder team (OpsGenie).
	Team string `yaml:"team"`
	// Continue evaluates the next routes too (default: first match wins).
	Continue bool `yaml:"continue"`
}

// RouteMatch selects workspaces by name globs and labels (all must match).
type RouteMatch struct {
	Workspaces []string          `yaml:"workspaces"`
	Labels     map[string]string `yaml:"labels"`
}

// BackendPolicy configures the state-backend hygiene checks (findings of
// kind backend). Unset keys take the defaults' value, then the built-in one.
type BackendPolicy struct {
	// Enabled turns the checks on (default true).
	Enabled *bool `yaml:"enabled"`
	// AllowLocal accepts local state (default: only for workspaces labelled env=dev).
	AllowLocal *bool `yaml:"allow_local"`
	// RequireEncryption: s3 encrypt, https for http backends (default true).
	RequireEncryption *bool `yaml:"require_encryption"`
	// RequireLocking: s3 use_lockfile/dynamodb_table, http lock_address (default true).
	RequireLocking *bool `yaml:"require_locking"`
}

// EffectiveBackendPolicy merges the workspace's backend_policy over
// defaults.backend_policy over the built-in defaults.
func (c *Config) EffectiveBackendPolicy(w Workspace) backend.Policy {
	p := backend.DefaultPolicy()
	p.AllowLocal = w.Labels["env"] == "dev"
	for _, bp := range []*BackendPolicy{c.Defaults.BackendPolicy, w.BackendPolicy} {
		if bp == nil {
			continue
		}
		for dst, src := range map[*bool]*bool{&p.Enabled: bp.Enabled, &p.AllowLocal: bp.AllowLocal,
			&p.RequireEncryption: bp.RequireEncryption, &p.RequireLocking: bp.RequireLocking} {
			if src != nil {
				*dst = *src
			}
		}
	}
	return p
}

// Daemon defaults.
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultMaxConcurrentRuns = 4
	DefaultKeepRuns          = 200
	DefaultMaxLogBytes       = 1 << 20
	DefaultSchedule          = "@hourly"
)

// Defaults fill keys a workspace leaves unset.
type Defaults struct {
	// Schedule is the cron schedule of workspaces without one (default @hourly).
	Schedule string `yaml:"schedule"`
	// Jitter spreads scheduled runs over up to this long, by a stable hash
	// of the workspace name (default 0).
	Jitter    Duration `yaml:"jitter"`
	Timeout   Duration `yaml:"timeout"`
	Forbidden []string `yaml:"forbidden"`
	// BackendPolicy is the default state-backend hygiene policy.
	BackendPolicy *BackendPolicy    `yaml:"backend_policy"`
	Env           map[string]string `yaml:"env"`
	Labels        map[string]string `yaml:"labels"`
	// Remediation is the default remediation policy of every workspace.
	Remediation *Remediation `yaml:"remediation"`
}

// Workspace is one Terraform root module (and Terraform workspace) to check.
type Workspace struct {
	Name           string            `yaml:"name"`
	Source         Source            `yaml:"source"`
	Binary         string            `yaml:"binary"`
	Workspace      string            `yaml:"workspace"`
	VarFiles       []string          `yaml:"var_files"`
	Vars           map[string]string `yaml:"vars"`
	Env            map[string]string `yaml:"env"`
	SecretEnvFiles map[string]string `yaml:"secret_env_files"`
	BackendConfig  []string          `yaml:"backend_config"`
	Timeout        Duration          `yaml:"timeout"`
	Schedule       string            `yaml:"schedule"`
	Alerts         *AlertPolicy      `yaml:"alerts"`
	BackendPolicy  *BackendPolicy    `yaml:"backend_policy"`
	Owner          string            `yaml:"owner"`
	Labels         map[string]string `yaml:"labels"`
	Ignore         []Ignore          `yaml:"ignore"`
	// Forbidden replaces defaults.forbidden for this workspace when set
	// (an empty list allows every type).
	Forbidden *[]string `yaml:"forbidden"`
	// Remediation overrides defaults.remediation for this workspace.
	Remediation *Remediation `yaml:"remediation"`
	// LogPlanText puts Terraform's full, human-readable plan text, attribute
	// values included, into the run log (default false: addresses, actions
	// and attribute paths only). Such a log is served only to an
	// authenticated reader.
	LogPlanText bool `yaml:"log_plan_text"`

	pos    *positions
	prefix string // key path of this workspace, e.g. "workspaces[2]"
}

// Source is where a workspace's code comes from: exactly one of Path or Git.
type Source struct {
	Path string     `yaml:"path"`
	Git  *GitSource `yaml:"git"`
}

// GitSource is a git repository holding the root module.
type GitSource struct {
	URL             string `yaml:"url"`
	Ref             string `yaml:"ref"`
	Path            string `yaml:"path"`
	CredentialsFile string `yaml:"credentials_file"`
}

// Ignore silences drift on matching addresses (and, if given, attributes).
type Ignore struct {
	Address    string   `yaml:"address"`
	Attributes []string `yaml:"attributes"`
}

// Rules compiles the workspace's policy rules (forbidden and ignore globs).
// LoadFile has validated them, so errors only occur for hand-built configs.
func (w Workspace) Rules(d Defaults) (policy.Rules, error) {
	var r policy.Rules
	forbidden := d.Forbidden
	if forbidden == nil {
		forbidden = DefaultForbidden
	}
	if w.Forbidden != nil {
		forbidden = *w.Forbidden
	}
	for _, f := range forbidden {
		g, err := policy.CompileGlob(f)
		if err != nil {
			return r, err
		}
		r.Forbidden = append(r.Forbidden, g)
	}
	for _, ig := range w.Ignore {
		a, err := policy.CompileGlob(ig.Address)
		if err != nil {
			return r, err
		}
		rule := policy.IgnoreRule{Address: a}
		for _, at := range ig.Attributes {
			g, err := policy.CompileGlob(at)
			if err != nil {
				return r, err
			}
			rule.Attributes = append(rule.Attributes, g)
		}
		r.Ignore = append(r.Ignore, rule)
	}
	return r, nil
}

// EffectiveTimeout is the workspace timeout, else the default, else DefaultTimeout.
func (w Workspace) EffectiveTimeout(d Defaults) time.Duration {
	switch {
	case w.Timeout > 0:
		return time.Duration(w.Timeout)
	case d.Timeout > 0:
		return time.Duration(d.Timeout)
	}
	return DefaultTimeout
}

// LoadFile reads, strictly decodes and validates the config at path,
// including its `include:` fragments. Every error names file, line and key.
func LoadFile(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Load(abs, data)
}

// Load decodes and validates config data that was read from file (used for
// relative paths and error messages).
func Load(file string, data []byte) (*Config, error) {
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
	if err := cfg.validate(pos); err != nil {
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

var (
	dnsLabel  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	envName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	labelName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_./]{0,61}[A-Za-z0-9])?$`)
)

// reservedEnv are environment variables driftwatch sets itself or that
// would change what Terraform does behind the config's back.
func reservedEnv(k string) string {
	switch {
	case strings.HasPrefix(k, "TF_VAR_"):
		return "set Terraform variables with vars or var_files instead"
	case strings.HasPrefix(k, "TF_CLI_ARGS"), strings.HasPrefix(k, "TF_LOG"),
		k == "TF_WORKSPACE", k == "TF_INPUT", k == "TF_IN_AUTOMATION", k == "TF_DATA_DIR",
		k == "TF_CLI_CONFIG_FILE", k == "TF_PLUGIN_CACHE_DIR", k == "TF_REATTACH_PROVIDERS",
		k == "TF_APPEND_USER_AGENT", k == "TF_DISABLE_PLUGIN_TLS", k == "TF_SKIP_PROVIDER_VERIFY",
		k == "HOME", k == "PATH", strings.HasPrefix(k, "DRIFTWATCH_"):
		return "driftwatch controls this variable"
	}
	return ""
}

func (c *Config) validate(pos *positions) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	dir := filepath.Dir(c.File)

	c.Terraform.CLIConfigFile = absFrom(dir, c.Terraform.CLIConfigFile)
	if f := c.Terraform.CLIConfigFile; f != "" {
		if _, err := os.Stat(f); err != nil {
			add(pos.errorf("terraform.cli_config_file", "%v", err))
		}
	}
	if c.Server.Listen == "" {
		c.Server.Listen = DefaultListen
	}
	c.Server.TokenFile = absFrom(dir, c.Server.TokenFile)
	c.Server.ReadTokenFile = absFrom(dir, c.Server.ReadTokenFile)
	for _, tf := range []struct{ key, file string }{
		{"server.token_file", c.Server.TokenFile}, {"server.read_token_file", c.Server.ReadTokenFile},
	} {
		if err := checkTokenFile(tf.file); err != nil {
			add(pos.errorf(tf.key, "%v", err))
		}
	}
	c.Server.TLSCertFile = absFrom(dir, c.Server.TLSCertFile)
	c.Server.TLSKeyFile = absFrom(dir, c.Server.TLSKeyFile)
	if err := checkTLSPair(c.Server.TLSCertFile, c.Server.TLSKeyFile); err != nil {
		add(pos.errorf(err.key, "%v", err.err))
	}
	for i, h := range c.Server.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			add(pos.errorf(fmt.Sprintf("server.allowed_hosts[%d]", i), "%v", err))
		}
	}
	if u := c.Server.ExternalURL; u != "" {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			add(pos.errorf("server.external_url", "%q is not an http(s) URL", u))
		}
	}
	c.Store.Path = absFrom(dir, c.Store.Path)
	if c.Store.Path == "" {
		c.Store.Path = filepath.Join(userDataDir(), "driftwatch.db")
	}
	switch {
	case c.Store.MaxLogBytes == 0:
		c.Store.MaxLogBytes = DefaultMaxLogBytes
	case c.Store.MaxLogBytes < 4096:
		add(pos.errorf("store.max_log_bytes", "must be at least 4096"))
	}
	switch {
	case c.Store.KeepRuns == 0:
		c.Store.KeepRuns = DefaultKeepRuns
	case c.Store.KeepRuns < 0:
		add(pos.errorf("store.keep_runs", "must be positive"))
	}
	switch {
	case c.MaxConcurrentRuns == 0:
		c.MaxConcurrentRuns = DefaultMaxConcurrentRuns
	case c.MaxConcurrentRuns < 0:
		add(pos.errorf("max_concurrent_runs", "must be positive"))
	}
	if c.Defaults.Schedule == "" {
		c.Defaults.Schedule = DefaultSchedule
	} else if err := c.checkSchedule(c.Defaults.Schedule); err != nil {
		add(pos.errorf("defaults.schedule", "%v", err))
	}
	c.Terraform.PluginCacheDir = absFrom(dir, c.Terraform.PluginCacheDir)
	c.Terraform.WorkDir = absFrom(dir, c.Terraform.WorkDir)
	c.Terraform.GitCacheDir = absFrom(dir, c.Terraform.GitCacheDir)
	if c.Terraform.Binary != "" {
		if err := checkBinary(dir, &c.Terraform.Binary); err != nil {
			add(pos.errorf("terraform.binary", "%v", err))
		}
	}
	for i, p := range c.Terraform.SandboxPaths {
		c.Terraform.SandboxPaths[i] = absFrom(dir, p)
	}
	switch c.Terraform.Sandbox {
	case "":
		c.Terraform.Sandbox = "auto"
	case "auto", "namespaces", "off":
	default:
		add(pos.errorf("terraform.sandbox", "%q: want auto, namespaces or off", c.Terraform.Sandbox))
	}
	for i, f := range c.Defaults.Forbidden {
		if _, err := policy.CompileGlob(f); err != nil {
			add(pos.errorf(fmt.Sprintf("defaults.forbidden[%d]", i), "invalid glob %q: %v", f, err))
		}
	}
	for k := range c.Defaults.Env {
		if err := checkEnvName(k); err != nil {
			add(pos.errorf("defaults.env."+k, "%v", err))
		}
	}

	errs = append(errs, c.validateAlerts(pos)...)
	errs = append(errs, c.validateRemediation(pos)...)
	errs = append(errs, c.validateRunner(pos)...)
	first := map[string]string{}
	for i := range c.Workspaces {
		w := &c.Workspaces[i]
		errs = append(errs, w.validate(c)...)
		if w.Name == "" {
			continue
		}
		if prev, dup := first[w.Name]; dup {
			add(w.pos.errorf(w.prefix+".name", "duplicate workspace name %q (first defined at %s)", w.Name, prev))
			continue
		}
		first[w.Name] = w.pos.at(w.prefix + ".name")
	}
	return errors.Join(errs...)
}

func (w *Workspace) validate(c *Config) []error {
	var errs []error
	key := func(k string) string { return w.prefix + "." + k }
	add := func(k, format string, args ...any) { errs = append(errs, w.pos.errorf(key(k), format, args...)) }
	dir := filepath.Dir(w.pos.file)

	switch {
	case w.Name == "":
		add("name", "required")
	case !dnsLabel.MatchString(w.Name):
		add("name", "%q is not a DNS label (lowercase letters, digits and '-', at most 63 characters)", w.Name)
	}
	s := &w.Source
	switch {
	case s.Path == "" && s.Git == nil:
		add("source", "set exactly one of path or git")
	case s.Path != "" && s.Git != nil:
		add("source", "set exactly one of path or git, not both")
	case s.Path != "":
		s.Path = absFrom(dir, s.Path)
		if fi, err := os.Stat(s.Path); err != nil {
			add("source.path", "%v", err)
		} else if !fi.IsDir() {
			add("source.path", "%s is not a directory", s.Path)
		}
	default:
		g := s.Git
		if g.URL == "" {
			add("source.git.url", "required")
		} else if u, err := url.Parse(g.URL); err == nil && u.User != nil {
			// Never echo the URL: it may hold a token.
			add("source.git.url", "credentials in the URL are not allowed; use credentials_file")
		}
		if filepath.IsAbs(g.Path) || strings.Contains(g.Path, "..") {
			add("source.git.path", "must be a relative path inside the repository")
		}
		if g.CredentialsFile != "" {
			g.CredentialsFile = absFrom(dir, g.CredentialsFile)
			if _, err := os.Stat(g.CredentialsFile); err != nil {
				add("source.git.credentials_file", "%v", err)
			}
		}
	}
	if w.Schedule == "" {
		w.Schedule = c.Defaults.Schedule
	} else if err := c.checkSchedule(w.Schedule); err != nil {
		add("schedule", "%v", err)
	}
	if w.Binary != "" {
		if err := checkBinary(dir, &w.Binary); err != nil {
			add("binary", "%v", err)
		}
	}
	for i, f := range w.VarFiles {
		if filepath.IsAbs(f) {
			if _, err := os.Stat(f); err != nil {
				add(fmt.Sprintf("var_files[%d]", i), "%v", err)
			}
		} else if s.Path != "" {
			if _, err := os.Stat(filepath.Join(s.Path, f)); err != nil {
				add(fmt.Sprintf("var_files[%d]", i), "%v (relative var files resolve against the source directory)", err)
			}
		}
	}
	for k := range w.Vars {
		if !envName.MatchString(k) {
			add("vars."+k, "%q is not a valid Terraform variable name", k)
		}
	}
	for k := range w.Env {
		if err := checkEnvName(k); err != nil {
			add("env."+k, "%v", err)
		}
	}
	for k, f := range w.SecretEnvFiles {
		if err := checkEnvName(k); err != nil {
			add("secret_env_files."+k, "%v", err)
			continue
		}
		if _, dup := w.Env[k]; dup {
			add("secret_env_files."+k, "also set in env")
		}
		w.SecretEnvFiles[k] = absFrom(dir, f)
		if _, err := os.Stat(w.SecretEnvFiles[k]); err != nil {
			add("secret_env_files."+k, "%v", err)
		}
	}
	for k, v := range w.Labels {
		if !labelName.MatchString(k) {
			add("labels."+k, "invalid label name %q", k)
		}
		if strings.ContainsAny(v, "\n\r") {
			add("labels."+k, "label values must be one line")
		}
	}
	for i, ig := range w.Ignore {
		k := fmt.Sprintf("ignore[%d]", i)
		if ig.Address == "" {
			add(k+".address", "required")
		} else if _, err := policy.CompileGlob(ig.Address); err != nil {
			add(k+".address", "invalid glob %q: %v", ig.Address, err)
		}
		for j, a := range ig.Attributes {
			if _, err := policy.CompileGlob(a); err != nil {
				add(fmt.Sprintf("%s.attributes[%d]", k, j), "invalid glob %q: %v", a, err)
			}
		}
	}
	if w.Alerts != nil {
		errs = append(errs, w.Alerts.validate(w.pos, w.prefix+".alerts")...)
	}
	errs = append(errs, w.Remediation.validate(w.pos, w.prefix+".remediation")...)
	if w.Forbidden != nil {
		for i, f := range *w.Forbidden {
			if _, err := policy.CompileGlob(f); err != nil {
				add(fmt.Sprintf("forbidden[%d]", i), "invalid glob %q: %v", f, err)
			}
		}
	}
	// Merge defaults so consumers see the effective workspace.
	w.Labels = merge(c.Defaults.Labels, w.Labels)
	w.Env = merge(c.Defaults.Env, w.Env)
	for k := range w.SecretEnvFiles {
		delete(w.Env, k) // a workspace secret overrides a default plain value
	}
	return errs
}

// checkSchedule validates a cron schedule the way the scheduler parses it.
func (c *Config) checkSchedule(spec string) error {
	parse := schedule.ParseSpec
	if c.AllowSubMinuteSchedules {
		parse = schedule.ParseSpecSubMinute
	}
	_, err := parse(spec)
	return err
}

func checkEnvName(k string) error {
	if !envName.MatchString(k) {
		return fmt.Errorf("%q is not a valid environment variable name", k)
	}
	if why := reservedEnv(k); why != "" {
		return fmt.Errorf("%s cannot be set: %s", k, why)
	}
	return nil
}

// checkBinary accepts "terraform", "tofu", a name found on PATH, or a path
// (relative to the config file) to an executable.
func checkBinary(dir string, b *string) error {
	if !strings.ContainsRune(*b, filepath.Separator) {
		return nil // looked up on PATH at run time: PATH may differ where it runs (e.g. in a Job)
	}
	*b = absFrom(dir, *b)
	fi, err := os.Stat(*b)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", *b)
	}
	return nil
}

func absFrom(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[2:])
		}
	}
	return filepath.Join(dir, p)
}

func userDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "driftwatch")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "driftwatch")
	}
	return filepath.Join(os.TempDir(), "driftwatch")
}

func merge(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return over
	}
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
