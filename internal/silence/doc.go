// Package silence decides whether a workspace's notifications are held at
// a moment: by a silence an on-call engineer set (store.Silence, from the
// API or `driftwatch silence`) or by a configured maintenance window
// (config.MaintenanceWindow). Held messages are still enqueued, marked
// held, and sent collapsed (incident.Collapse) once nothing holds the
// workspace any more; checks run and incidents are recorded as usual.
//
// Book is the daemon's in-memory view: the store is the record of
// silences, and the daemon loads it at start and writes through on every
// change, so Held never touches the store (it is asked inside the store's
// write transaction, where a read of the store would wait on it). It must
// not import app, server, notify vendors or the store implementation.
package silence
