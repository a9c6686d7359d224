package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/policy/pattern"
)

// DefaultForbidden is the forbidden resource type list used when neither
// defaults.forbidden nor a workspace's forbidden is set: these belong to
// GitOps (Argo CD), not Terraform.
var DefaultForbidden = []string{"kubernetes_*", "helm_release"}

// DefaultTimeout bounds one workspace run when no timeout is configured.
const DefaultTimeout = 10 * time.Minute

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

// Ignore silences drift on matching addresses (and, if given, attributes):
// pattern.Ignore, which policy.CompileRules compiles.
type Ignore = pattern.Ignore

// EffectiveForbidden is the workspace's forbidden resource type patterns:
// its forbidden when set (an empty list allows every type), else
// defaults.forbidden, else DefaultForbidden. policy.CompileRules compiles
// them with the workspace's Ignore entries into its rules.
func (w Workspace) EffectiveForbidden(d Defaults) []string {
	forbidden := d.Forbidden
	if forbidden == nil {
		forbidden = DefaultForbidden
	}
	if w.Forbidden != nil {
		forbidden = *w.Forbidden
	}
	return forbidden
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
		} else if _, err := pattern.Compile(ig.Address); err != nil {
			add(k+".address", "invalid glob %q: %v", ig.Address, err)
		}
		for j, a := range ig.Attributes {
			if _, err := pattern.Compile(a); err != nil {
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
			if _, err := pattern.Compile(f); err != nil {
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
