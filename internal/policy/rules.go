package policy

import "github.com/driftwatch/driftwatch/internal/policy/pattern"

// Glob is the anchored shell-style pattern of forbidden types, ignore
// addresses and ignore attribute paths (see pattern.Glob for the syntax).
type Glob = pattern.Glob

// CompileGlob compiles a pattern (pattern.Compile).
func CompileGlob(p string) (Glob, error) { return pattern.Compile(p) }

// MustCompileGlob is CompileGlob for patterns known to be valid (tests,
// built-in defaults); it panics on a malformed pattern.
func MustCompileGlob(p string) Glob { return pattern.MustCompile(p) }

// CompileRules compiles a workspace's configured rules: forbidden, the
// resource type patterns (the config's effective list,
// config.Workspace.EffectiveForbidden), and ignore, its ignore entries.
// config.LoadFile has validated them, so errors only occur for hand-built
// configs.
func CompileRules(forbidden []string, ignore []pattern.Ignore) (Rules, error) {
	var r Rules
	for _, f := range forbidden {
		g, err := CompileGlob(f)
		if err != nil {
			return r, err
		}
		r.Forbidden = append(r.Forbidden, g)
	}
	for _, ig := range ignore {
		a, err := CompileGlob(ig.Address)
		if err != nil {
			return r, err
		}
		rule := IgnoreRule{Address: a}
		for _, at := range ig.Attributes {
			g, err := CompileGlob(at)
			if err != nil {
				return r, err
			}
			rule.Attributes = append(rule.Attributes, g)
		}
		r.Ignore = append(r.Ignore, rule)
	}
	return r, nil
}
