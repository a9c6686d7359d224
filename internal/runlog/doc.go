// Package runlog is the bounded, redacted log of one run: Terraform's output
// line by line, kept as a head and a tail within a byte cap, and streamed to
// live followers (the SSE endpoint) while the run is in flight.
//
// Redaction (New's redact func, if given) is applied to every complete line
// before it is stored or sent to any subscriber, so a secret split across
// two Write calls is still caught. A partial final line is flushed
// (redacted) by Close. A slow follower loses lines, never blocks the writer.
//
// It also owns Registry, the runs in flight in this process (each one's
// live log and cancel function, ErrCancelled as the cancel cause), and
// ValuesNotice, the first line that marks a log holding attribute values
// (log_plan_text).
//
// It keeps logs in memory only: storing a finished log is the daemon's
// (store.LogStore), serving it the server's, and what a runner writes into
// it (and its redaction of the run's secrets) the runner's. It imports only
// the standard library and must not import store, server, runner or app.
package runlog
