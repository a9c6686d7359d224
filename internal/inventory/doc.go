// Package inventory is the daemon's inventory: the config it runs from
// and what is built from it, one generation at a time.
//
// What it owns:
//
//   - Snapshot, one generation: the config, its run targets
//     (pipeline.Targets, with the daemon's owner and the sandbox's jail)
//     and its alert plans (incident.Plans, held by the silence.Book).
//     Build makes one; Watcher publishes it through a single atomic
//     pointer, so a reader of Snapshot never pairs one config's targets
//     with another's plans. Outcome is a finished run's incident decision
//     by the current plan (the run lifecycle's run.Incidents).
//   - Watcher, the reload: Run checks the config file every few seconds
//     and on SIGHUP, re-discovers git discover: entries every
//     DiscoverRefresh (applied only when the expanded inventory changed),
//     and, once the daemon leads, retires the workspaces that left the
//     config while it was stopped (RetireRemoved: their open incidents
//     resolve through the outbox; runs and incident rows stay). Apply
//     hands the scheduler the new jobs (its refusal keeps the old
//     snapshot), a changed notifiers: list's specs to Notifiers (notifiers.Reload), publishes, tells
//     the followers (remediation), then, while leading, retires removed
//     workspaces and queues those never checked. An invalid config is
//     logged and the previous snapshot stays.
//   - Loading with discovery: Finder, config's Finder over discover and
//     source; Load reads the config file and expands its local discover:
//     entries; DiscoverGit checks git ones out and expands them (within
//     DiscoverTimeout for the daemon and audit, unbounded for the
//     inventory command).
//
// The parts a reload drives reach it through named interfaces (Runs,
// Store, Leader, Outbox, Notifiers, Follower), handed over by Connect once
// they exist. It must not import app, server, outbox, the notifier
// implementations or the store implementation. Its user is app; run,
// silence and remediation read it through their own interfaces.
package inventory
