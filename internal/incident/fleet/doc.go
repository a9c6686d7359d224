// Package fleet is the daemon's grouping of drift by cause across
// workspaces (config grouping:): one cause, one incident, one page per
// route, not one per workspace.
//
// It stands between a run and the incidents. As the run lifecycle's
// Incidents (run.Incidents), it decides each run's workspace incidents
// with the workspace's alert plan (incident.Plan), leaving out of the
// workspace's own drift incident the findings that are in a group of
// several workspaces (group.Compute over every workspace's latest state
// and this run's findings) and those that wait for one: a drift finding
// that could join a group waits grouping.wait from the check that first
// saw it, time for the rest of the fleet to be checked.
//
// After every recorded run (Recorded) and on a tick, Pass decides the
// group incidents (incident.Groups, written by store.GroupStore's
// DecideGroups with their outbox messages in one transaction): a new
// group opens one and pages each notifier its member workspaces route
// to, once; members joining or leaving update it; it resolves when its
// last member is clean. Pass also opens, outside any run, the workspace
// incidents of findings whose wait ended without a group.
//
// An open group keeps its members down to the last (group.Options.Open),
// read from the store when the service first runs, so a restarted daemon
// neither splits a group nor pages its members again. Leader only: the
// daemon runs Run among the loops of the lead.
//
// It reads the config, the alert plans and the run states through
// functions (the inventory's snapshot, the run manager's State), so that
// it imports neither; its user is app.
package fleet
