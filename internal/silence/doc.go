// Package silence decides whether a workspace's notifications are held at
// a moment: by a silence an on-call engineer set (store.Silence, from the
// API or `driftwatch silence`) or by a configured maintenance window
// (config.MaintenanceWindow). Held messages are still enqueued, marked
// held, and sent collapsed (incident.Collapse) once nothing holds the
// workspace any more; checks run and incidents are recorded as usual.
//
// What it owns:
//
//   - Book, the daemon's in-memory view: the store is the record of
//     silences, and the daemon loads it at start and writes through on
//     every change, so Held never touches the store (it is asked inside
//     the store's write transaction, where a read of the store would wait
//     on it). The inventory sets its windows at every config load.
//   - Service, the silences as the daemon runs them: Add checks a request
//     (bounds, comment and author, a configured workspace or labels) and
//     stores it, Expire ends one, Load reloads the Book from the store (a
//     standby that becomes leader), and Run, while the daemon leads,
//     releases the held messages of workspaces nothing holds any more,
//     every 15 seconds and at once when a silence is expired. A standby
//     adds and expires nothing (its Leader's error).
//
// Its errors are its own (RequestError, ErrUnknownWorkspace); Service.Control,
// the silences as the server sees them, maps them onto the server's (a
// standby's error, the leader's, is the server's refusal already). It must
// not import app, the server (but its control seam), notify vendors or the
// store implementation. Its user is app.
package silence
