// Package attribution asks an operator's program who changed a drifted
// resource: the `attribution.command` of issue #33, an adapter over an
// audit trail (CloudTrail, a cloud audit log, the Kubernetes audit log).
//
// [Command.Ask] runs the program outside Terraform's jail, as the daemon's
// user, with an environment of its own (PATH, a private temporary HOME and
// the Command's Env; nothing else of the daemon's), the [Query] (workspace,
// address, type, provider, the identifying attributes that [IDs] picks from
// the state, and the window in which the change happened) as JSON on
// stdin. It reads one JSON [Answer] from stdout ({actor, time, source,
// event_id, url}) and checks it strictly: unknown fields, a missing actor,
// control characters, over-long fields and URLs other than http(s) are
// refused. Stdout is bounded (MaxAnswerSize: the program is killed when it
// prints more) and only the end of stderr is kept. The program runs in a
// process group of its own, killed whole at its timeout, when the caller's
// context ends and when it exits, so nothing it started stays behind
// (unless it left the group). Every error names argv[0] and what went
// wrong, never an Env value.
//
// A failed Ask is the caller's to log: it must never fail a run. The JSON
// wire format is the contract with adapters written in any language;
// cmd/driftwatch-attribute-kube is one.
//
// [IDsJSON] is IDs over plan JSON values with the plan's sensitivity
// markers: what planparse keeps of a drifted object.
//
// The package imports only the standard library: planparse (IDsJSON) and
// the pipeline (Ask, for each drift finding first seen) import it, not the
// reverse. Design notes are in docs/architecture/attribution.md.
package attribution
