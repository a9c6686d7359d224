// Package engine reverts drift with a Terraform apply, and only drift:
// the safety envelope that decides whether a run may be remediated, the
// change set an approval is given for, and the guarded apply itself.
//
// # The envelope (pure)
//
// Evaluate takes a run's findings (policy.Classify) and value-free plan
// (planparse) and returns the ChangeSet an apply would perform, the
// normalised set of (address, action, attribute paths), plus every
// Refusal: a forbidden finding; a pending finding (remediation reverts
// drift, it never deploys unreviewed code); a planned change that is not a
// counted drift finding (ignored drift, deposed objects, imports); an
// apply that would revert an attribute an ignore rule silences; drift the
// plan would not revert but only record in state; an action outside
// Envelope.AllowActions; more than Envelope.MaxResources changes; no
// drift at all. AllowActions governs what the apply does, not what the
// drift was: a resource deleted outside Terraform is a planned "create",
// its own allow-list entry, off by default (re-creating an object is not
// reverting an attribute, and a deletion by hand is often deliberate).
//
// ChangeSet.Hash is stable (order-independent) and changes with any
// address, action or attribute path. It is what an approval is given for.
//
// # The apply (Applier.Apply)
//
// In one fresh sandbox, like the local runner's: init, plan -out with the
// state lock (never -lock=false), show -json streamed into planparse,
// classify and Evaluate again, refuse unless the fresh ChangeSet's hash
// equals the approved one, apply exactly that saved plan (lock on), then
// a verification plan that must show nothing left at the approved
// addresses. The outcome is applied, failed, verification_failed or
// refused, with a one-line, secret-free reason.
//
// Why re-plan instead of applying the detection run's saved plan: the
// local runner deletes its sandbox (and with it the plan file, which may
// hold secrets) when a run ends, a Kubernetes Job's file never reaches the
// daemon, and an approval may come days later. Equal change-set hashes
// give the same guarantee as the approved file (same resources, actions
// and paths), and applying the fresh saved plan leaves no gap between the
// check and the apply (Terraform rejects a saved plan whose state moved).
//
// The hash is value-free, so it cannot tell "revert content to v1" from
// "set content to v2" (a configuration change on a drifted attribute has
// the same paths). Apply therefore also reads the fresh plan's values,
// as digests that never leave the process, and refuses (not_a_revert)
// when a planned value of a drifted resource differs from its prior state.
//
// # The state lock after a failed apply
//
// Terraform releases the state lock when an apply fails or is interrupted
// and it stops by itself (a provider error; SIGINT on cancellation or
// timeout), and says so when it cannot. An apply that is killed (SIGKILL
// of the runner, the OOM killer, the kill that follows SIGINT after the
// grace) cannot: the lock stays in the backend (an S3 lock file, say), and
// every later apply of the state fails until someone force-unlocks it.
// So, after a failed apply that was killed by a signal (an exit status of
// 128+signal through the jail), that reports "Error releasing the state
// lock", or that printed no diagnostic at all (a crash), Apply checks the
// lock (checkLock): `terraform plan -lock=true -lock-timeout=0s` in the
// same sandbox, which writes no state. Terraform takes and gives back a
// free lock; a held one fails the plan with the "Lock Info:" block that
// names it. The check runs under a context and a run marker of its own,
// even after the apply's context ended, so that the sweep of the apply's
// processes cannot kill it while it holds the lock. It never force-unlocks:
// whether the holder is gone is for a person to decide. Outcome.StateLock
// records what it found (released, held with the lock's ID, operation,
// holder and creation time, or unknown with why), and the failed outcome's
// reason ends with it: for a held lock, that the remediation is not
// retried and the `terraform force-unlock ID` to run once nobody is
// applying. No check is made after a failure Terraform explained itself:
// the check takes the lock, and a kill of the daemon or the pod during it
// would leave one behind. The check plans with refresh (tfsession's plan
// has no -refresh=false), so on a large workspace it costs a refresh.
//
// A failed apply is never retried for the same change set: the
// controller (internal/remediation) proposes a change set again only
// after a passing refusal (state_locked, daemon_unreachable,
// remediation_off), never after failed.
//
// The state must outlive the sandbox: a workspace whose state is a local
// file inside its code (no backend block, or a local backend with a
// relative path) is refused (state_in_sandbox), since the apply would
// write the new state into the copy, which is then deleted.
//
// The caller owns approval, expiry, the global kill switch's state
// (Applier.Paused) and running at most one operation per workspace.
//
// Envelope, its defaults and its validation live in the leaf
// internal/policy/envelope (engine.Envelope is envelope.Envelope),
// which config embeds in a workspace's `remediation:` block: the keys and
// checks are written once.
//
// It drives Terraform through internal/terraform/tfsession (the one importer of
// terraform-exec), as the local runner does; it must not import config,
// store, notify, server or app.
package engine
