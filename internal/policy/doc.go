// Package policy classifies a parsed plan (planparse.Plan) into findings:
// drift, pending, noise, forbidden and check (see Classify), and applies a
// workspace's ignore rules to drift. It owns Rules, a workspace's compiled
// rules, and CompileRules, which compiles them from the config's patterns
// (config.Workspace.EffectiveForbidden and its pattern.Ignore entries).
// Glob, the anchored shell-style pattern, is pattern.Glob: the leaf
// internal/policy/pattern holds the one implementation, so config can
// validate patterns without importing policy.
//
// It is pure code: no clock, no I/O, no logging. It must not import
// anything that does I/O (os/exec, net/http, runner, notify, store) nor
// internal/config: config carries plain patterns, policy compiles them.
package policy
