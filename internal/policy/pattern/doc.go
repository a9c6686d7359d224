// Package pattern is the vocabulary a workspace's policy rules are written
// in: Glob, the anchored shell-style pattern used for forbidden resource
// types, ignore addresses and ignore attribute paths (Compile), and Ignore,
// one ignore entry as configured (patterns not yet compiled).
//
// It is a leaf: it imports no other internal package, so internal/config
// carries Ignore as is and validates patterns with Compile, and
// internal/policy compiles a workspace's patterns into its Rules
// (policy.CompileRules) and matches them. There is one glob
// implementation; policy.Glob is this Glob.
package pattern
