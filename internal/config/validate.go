package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/driftwatch/driftwatch/internal/policy/pattern"
	"github.com/driftwatch/driftwatch/internal/schedule/cronspec"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox/netcfg"
)

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
	c.Server.MetricsTokenFile = absFrom(dir, c.Server.MetricsTokenFile)
	for _, tf := range []struct{ key, file string }{
		{"server.token_file", c.Server.TokenFile}, {"server.read_token_file", c.Server.ReadTokenFile},
		{"server.metrics_token_file", c.Server.MetricsTokenFile},
	} {
		if err := checkServerToken(tf.file); err != nil {
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
	c.Store.DSNFile = absFrom(dir, c.Store.DSNFile)
	switch c.Store.Driver {
	case "":
		c.Store.Driver = StoreSQLite
		fallthrough
	case StoreSQLite:
		if c.Store.DSNFile != "" {
			add(pos.errorf("store.dsn_file", "is for driver %s; the %s store is store.path", StorePostgres, StoreSQLite))
		}
	case StorePostgres:
		if c.Store.DSNFile == "" {
			add(pos.errorf("store.dsn_file", "is required with driver %s", StorePostgres))
		}
	default:
		add(pos.errorf("store.driver", "%q is not %s or %s", c.Store.Driver, StoreSQLite, StorePostgres))
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
	switch c.Terraform.SandboxNetwork {
	case "":
		c.Terraform.SandboxNetwork = netcfg.NetworkAuto
	case netcfg.NetworkAuto, netcfg.NetworkIsolated, netcfg.NetworkHost:
	default:
		add(pos.errorf("terraform.sandbox_network", "%q: want auto, isolated or host", c.Terraform.SandboxNetwork))
	}
	for i, hp := range c.Terraform.SandboxHostPorts {
		if _, err := netcfg.ParseHostPort(hp); err != nil {
			add(pos.errorf(fmt.Sprintf("terraform.sandbox_host_ports[%d]", i), "%v", err))
		}
	}
	for i, f := range c.Defaults.Forbidden {
		if _, err := pattern.Compile(f); err != nil {
			add(pos.errorf(fmt.Sprintf("defaults.forbidden[%d]", i), "invalid glob %q: %v", f, err))
		}
	}
	for k := range c.Defaults.Env {
		if err := checkEnvName(k); err != nil {
			add(pos.errorf("defaults.env."+k, "%v", err))
		}
	}

	errs = append(errs, c.validateAlerts(pos)...)
	errs = append(errs, c.validateMaintenance(pos)...)
	errs = append(errs, c.validateConcurrency(pos)...)
	errs = append(errs, c.validateRemediation(pos)...)
	errs = append(errs, c.Defaults.Attribution.validate(pos, "defaults.attribution", dir)...)
	for i := range c.AttributionByLabel {
		key := fmt.Sprintf("attribution_by_label[%d]", i)
		if len(c.AttributionByLabel[i].Labels) == 0 {
			errs = append(errs, pos.errorf(key+".labels", "at least one label is required (defaults.attribution applies to every workspace)"))
		}
		errs = append(errs, c.AttributionByLabel[i].validate(pos, key, dir)...)
	}
	errs = append(errs, c.validateAccept(pos)...)
	errs = append(errs, c.validateGrouping(pos)...)
	errs = append(errs, c.validateAuth(pos)...)
	errs = append(errs, c.validateRunner(pos)...)
	first := map[string]string{}
	for i := range c.Workspaces {
		w := &c.Workspaces[i]
		errs = append(errs, w.validate(c)...)
		errs = append(errs, checkDuplicate(first, w)...)
	}
	return errors.Join(errs...)
}

// checkSchedule validates a cron schedule the way the scheduler parses it.
func (c *Config) checkSchedule(spec string) error {
	parse := cronspec.Parse
	if c.AllowSubMinuteSchedules {
		parse = cronspec.ParseSubMinute
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
