// Package policy classifies a parsed plan (planparse.Plan) into findings:
// drift, pending, noise and forbidden (see Classify), and applies a
// workspace's ignore rules to drift. It also owns Glob, the anchored
// shell-style pattern used for forbidden types, ignore addresses and ignore
// attribute paths (config validation compiles them with CompileGlob).
//
// It is pure code: no clock, no I/O, no logging. It must not import
// anything that does I/O (os/exec, net/http, runner, notify, store) nor
// internal/config (config imports policy, not the other way round).
package policy
