package config

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/driftwatch/driftwatch/internal/policy/pattern"
)

// Scan is one scans: entry: a provider configuration whose list blocks
// (Terraform 1.14's `terraform query`) list what exists, compared on its
// own schedule with every workspace's state (docs/scans.md). The daemon,
// the audit and the API treat it as a workspace of its own (Workspace.Scan
// set): the same schedule, runner, jail, incidents, routes and reports.
type Scan struct {
	Name string `yaml:"name"`
	// Source is the directory holding the provider configuration (its
	// required_providers and provider blocks) and, without Types, its own
	// *.tfquery.hcl list blocks.
	Source         Source            `yaml:"source"`
	Binary         string            `yaml:"binary"`
	Schedule       string            `yaml:"schedule"`
	Timeout        Duration          `yaml:"timeout"`
	Env            map[string]string `yaml:"env"`
	SecretEnvFiles map[string]string `yaml:"secret_env_files"`
	Owner          string            `yaml:"owner"`
	Labels         map[string]string `yaml:"labels"`
	Alerts         *AlertPolicy      `yaml:"alerts"`
	// Types are the resource types to list: one generated list block each
	// (provider Provider, default the type's prefix before '_', with
	// Config as its config block).
	Types    []string       `yaml:"types"`
	Provider string         `yaml:"provider"`
	Config   map[string]any `yaml:"config"`
	// Limit is each generated list block's limit (default DefaultScanLimit).
	Limit int `yaml:"limit"`
	// Ignore marks listed resources as ignored: globs on the type and on
	// an identity value or the display name.
	Ignore []ScanIgnore `yaml:"ignore"`
}

// DefaultScanLimit is the most resources a generated list block lists
// when scans[].limit is unset (Terraform's own default is 100).
const DefaultScanLimit = 10000

// ScanIgnore is one scan ignore rule; an empty glob matches everything.
type ScanIgnore struct {
	Type     string `yaml:"type"`
	Identity string `yaml:"identity"`
}

// ListProvider is the provider local name of type typ's list block.
func (s *Scan) ListProvider(typ string) string {
	if s.Provider != "" {
		return s.Provider
	}
	p, _, _ := strings.Cut(typ, "_")
	return p
}

// expandScans adds one workspace per scans: entry (Workspace.Scan set),
// validated with the others under the key scans[i], and checks what is
// the scan's own.
func (c *Config) expandScans(pos *positions) []error {
	var errs []error
	for i := range c.Scans {
		s := &c.Scans[i]
		prefix := fmt.Sprintf("scans[%d]", i)
		add := func(k, format string, args ...any) {
			errs = append(errs, pos.errorf(prefix+"."+k, format, args...))
		}
		for j, t := range s.Types {
			if !hclsyntax.ValidIdentifier(t) || !strings.Contains(t, "_") {
				add(fmt.Sprintf("types[%d]", j), "%q is not a resource type (provider_name)", t)
			}
		}
		if s.Provider != "" && !hclsyntax.ValidIdentifier(s.Provider) {
			add("provider", "%q is not a provider local name", s.Provider)
		}
		switch {
		case s.Limit < 0:
			add("limit", "must be positive")
		case s.Limit == 0:
			s.Limit = DefaultScanLimit
		}
		if len(s.Config) > 0 && len(s.Types) == 0 {
			add("config", "is the config of generated list blocks: set types too")
		}
		for _, k := range slices.Sorted(maps.Keys(s.Config)) {
			if v := s.Config[k]; !hclsyntax.ValidIdentifier(k) {
				add("config."+k, "not an attribute name")
			} else if !listValue(v) {
				add("config."+k, "a %T: want a string, number, boolean or a list of them", v)
			}
		}
		for j, r := range s.Ignore {
			for _, g := range [][2]string{{"type", r.Type}, {"identity", r.Identity}} {
				if _, err := pattern.Compile(g[1]); err != nil {
					add(fmt.Sprintf("ignore[%d].%s", j, g[0]), "invalid glob %q: %v", g[1], err)
				}
			}
		}
		if len(s.Types) == 0 && s.Source.Path != "" {
			dir := absFrom(filepath.Dir(c.File), s.Source.Path)
			if m, _ := filepath.Glob(filepath.Join(dir, "*.tfquery.hcl")); len(m) == 0 {
				if _, err := os.Stat(dir); err == nil {
					add("types", "required: %s has no *.tfquery.hcl list blocks", s.Source.Path)
				}
			}
		}
		c.Workspaces = append(c.Workspaces, Workspace{
			Name: s.Name, Source: s.Source, Binary: s.Binary, Schedule: s.Schedule, Timeout: s.Timeout,
			Env: s.Env, SecretEnvFiles: s.SecretEnvFiles, Owner: s.Owner, Labels: s.Labels, Alerts: s.Alerts,
			// A scan plans nothing, so it has nothing to remediate.
			Remediation: &Remediation{Mode: RemediationOff},
			Scan:        s,
			pos:         pos, prefix: prefix,
		})
	}
	return errs
}

// listValue reports whether v (as YAML decodes it) can be written as an
// HCL literal: a string, a finite number, a boolean or a list of them.
func listValue(v any) bool {
	switch v := v.(type) {
	case string, bool, int, int64, uint64:
		return true
	case float64:
		return !math.IsInf(v, 0) && !math.IsNaN(v)
	case []any:
		for _, e := range v {
			if _, nested := e.([]any); nested || !listValue(e) {
				return false
			}
		}
		return true
	}
	return false
}
