// Package engine reverts drift with a Terraform apply, and only drift:
// the safety envelope that decides whether a run may be remediated, the
// change set an approval is given for, and the guarded apply itself.
//
// What it owns:
//
//   - Evaluate (pure): a run's findings (policy.Classify) and value-free
//     plan give the ChangeSet an apply would perform (address, action,
//     attribute paths) and every Refusal: forbidden or pending findings, a
//     planned change that is no counted drift, a revert of an attribute an
//     ignore rule silences, drift the plan would only record in state, an
//     action outside the Envelope, too many resources, no drift at all.
//   - ChangeSet.Hash: stable, order-independent, changed by any address,
//     action or attribute path; what an approval is given for.
//   - Applier.Apply: the guarded apply in one fresh sandbox
//     (tfsession.Prepare, as detection's): init, a plan under the state
//     lock, the envelope and the hash checked again on it, a revert check
//     on its values (not_a_revert), that saved plan applied, then a
//     verification plan. After a killed apply it checks whether the state
//     lock was left behind (LockCheck), and never force-unlocks.
//   - Outcome, Result and the refusal codes: what became of one
//     remediation, value-free, with a one-line, secret-free reason; the
//     vocabulary the runners' Jobs deliver too. ErrLeftRunning: an apply
//     that goes on in a Job after the daemon stopped.
//   - Adopt: a scan's unmanaged resources as import and resource blocks
//     Terraform generates (query -generate-config-out), proven by a plan
//     of a scratch copy that imports them and does nothing else.
//
// The caller (the controller, internal/remediation) owns approval,
// expiry, the kill switch's state (Applier.Paused, Applier.Proceed) and
// running at most one operation per workspace. Why it re-plans rather than
// applying the detection run's plan, and how the lock check works:
// docs/architecture/terraform.md.
//
// Envelope, its defaults and its validation are the leaf policy/envelope
// (engine.Envelope is envelope.Envelope), which config embeds.
//
// It drives Terraform through internal/terraform/tfsession, as the local
// runner does (the two are tfsession's only importers). runner/kube and
// runner/remote use its types; it must not import config, store, notify,
// server, app, the runners or the remediation controller.
package engine
