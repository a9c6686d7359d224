// Package redact scrubs secrets that have a shape rather than a known
// value: the user info and the query string of a URL ("https://user:pass@
// host/path?token=..."), which carry credentials in the URLs of state
// backends, git remotes and webhooks. Every run's log and error goes
// through it (sandbox.Redactor), and so does the one-line error a failed
// run leaves (audit), whatever code produced the text.
//
// Known secret values (secret env files, backend_config values, the
// daemon's own credentials) are not its business: sandbox.Redactor and
// notify.Redact replace those. It imports only the standard library and
// must not import any driftwatch package, so every package may use it.
package redact
