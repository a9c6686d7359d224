// Package incident decides the alert lifecycle of a workspace: which
// incidents open, change, re-notify and resolve after a run, and which
// notifiers each message goes to. It is pure code: no I/O, no clock (time
// is an argument), no randomness (IDs come from an injected func), so every
// transition is a table test.
//
// # Lifecycle
//
// A workspace has at most one incident per class (notify.ClassDrift,
// ClassForbidden, ClassValidation, ClassErrored), stored as one store.Incident row under a
// stable Key that is reused when the incident re-opens, so an OpsGenie alias
// or a Slack parent message follows the same workspace and class forever.
//
//	           observed                     confirm_after reached
//	(none) ─────────────▶ pending ────────────────────────────────▶ open
//	resolved               │  clean run: resolved silently          │ changed fingerprint: update
//	                       ▼                                        │ unchanged: nothing, or renotify
//	                    resolved ◀──────────────────────────────────┘ clean run: resolve
//
// Drift, forbidden and validation (failing checks: findings of kind check)
// incidents move only on successful runs: an errored run says nothing
// about drift or checks, so it leaves them exactly as they are. The
// errored incident follows the workspace's consecutive-error count instead:
// pending below errored_after, open at it, resolved by the next run that is
// not errored.
//
// Decide returns the changed rows and the notify.Messages; Enqueue turns the
// messages into one store.OutboxMessage per routed notifier (Routes), with
// the route's severity and team applied. The caller writes both in the same
// transaction as the run (store.AlertStore.FinishRunWithOutcome), so a crash
// never leaves an incident changed without its notification or the reverse.
//
// Remediation announces a remediation on the workspace's open drift
// incident (and nothing without one): a failed apply raises the incident's
// stored severity one step, which its later messages keep until it
// resolves; while raised, the incident also counts pending findings. The
// caller writes it in the remediation's transaction
// (store.RemediationStore.TransitionRemediationWithAlert).
//
// Groups is the lifecycle of a group incident (drift of several
// workspaces with one cause, incident/group): opened, updated as members
// join and leave, resolved with its last member, routed to the union of
// its members' targets. Policy.Grouped and Waiting leave its findings out
// of each workspace's drift incident (incident/fleet sets them).
//
// This package imports notify, store (for its plain data types), drift,
// incident/group and config (Plans reads it); it does no I/O.
package incident
