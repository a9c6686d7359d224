// Package email delivers incidents as email through an SMTP submission
// server, with the standard library's net/smtp client. It owns a pure
// message builder (buildMessage: a notify.Message to an envelope and an
// RFC 5322 message; exact tests) and a thin send. Its settings are
// emailcfg.Config (the notifiers[].email block, declared and checked
// there, with the one parse of an address); its TLS roots come from
// cafile.Pool. It must not import config, store, or any other notify
// vendor package; only the notifiers factory constructs it.
//
// One incident is one thread: every message of an incident refers to the
// first by Message-ID, and a resend carries the same Message-ID, which
// mail clients show once. There is no plain-text transport: STARTTLS is
// required, or TLS from the first byte.
//
// Threads, the message, the transport and replies, and the credentials
// are in docs/alerts/email.md.
package email
