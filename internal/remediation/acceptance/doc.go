// Package acceptance is accepting a workspace's drift as code, end to
// end: engine.Accept computes the code change and proves it with a plan
// of the changed code; for a workspace with a git source and an
// accept.notifier, propose.Propose pushes the change as a branch and
// opens its pull (merge) request. Do is one acceptance, as
// `driftwatch accept` runs it; Service is the daemon's: each request
// stored (store.AcceptanceStore) from the moment it is made, one at a
// time per workspace, run in the background and finished in the store
// with its outcome, so the API and the workspace page show it while it
// runs and after a restart (one that stopped mid-way is failed as
// interrupted).
//
// Service.Adopt is the daemon's adoption of a scan's unmanaged resources
// (engine.Adopt on the scan's request): run while the caller waits, one
// at a time per scan, and stored nowhere (its file holds values).
//
// A proposed acceptance waits for merge: the workspace's live drift
// incident shows it (server/view.Waiting) and resolves the usual way,
// when the merged code's next check is clean (for an accepted deletion,
// a removed block, after the workspace's next apply drops the object
// from the state).
//
// It imports the accept engine, the proposal, config (the accept block
// and the notifiers' settings) and the store; only the composition root
// (app) imports it: the server reaches the Service through
// control.AcceptControl and control.AdoptControl, and it knows neither
// the server nor the run lifecycle.
package acceptance
