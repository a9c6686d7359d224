// Package email delivers incidents as email through an SMTP submission
// server, with the standard library's net/smtp client. It owns its
// Config, a pure message builder (buildMessage: a notify.Message to an
// envelope and an RFC 5322 message; exact tests) and a thin send. It
// must not import config, store, or any other notify vendor package;
// only the notifiers factory constructs it.
//
// # Threads
//
// One incident is one thread, derived without state:
//
//   - The open message is the thread's root. Its Message-ID is
//     <dw-KEY.SINCE@DOMAIN>: the incident's key, when it opened (UTC,
//     YYYYMMDDTHHMMSSZ) and the domain of the From address.
//   - Every later message (update, renotify, remediation, resolve) has
//     its own Message-ID, <dw-ID@DOMAIN> from the message's ID, and
//     In-Reply-To and References naming the root.
//   - The subject stays the same through the thread: "[driftwatch]
//     Terraform drift in WS" (or "Forbidden resource types in WS",
//     "Drift checks failing for WS"; the prefix is subject_prefix),
//     with "Re: " before it on replies. The counts, which change, are in
//     the body: mail clients split a thread whose subject changes.
//
// A re-opened incident (another Since) starts a new thread. A notifier
// added while an incident is open sends replies to a root it never sent;
// clients still group them by References.
//
// Message-IDs are never random, so a resend carries the same one: the
// outbox's retry after a failure, and a crash between the server
// accepting a message and the outbox recording it (the outbox sends it
// again with the previous state), deliver the same message, with the same
// Message-ID, a second time. SMTP cannot refuse a duplicate; mail clients
// and many mailbox servers (Gmail, for one) show one message per
// Message-ID. Delivery is at least once.
//
// # The message
//
// Headers: Date (the message's time), From, To (every recipient, one
// transaction), Subject, Message-ID, In-Reply-To and References,
// MIME-Version, Content-Type text/plain; charset=utf-8,
// Content-Transfer-Encoding quoted-printable, Auto-Submitted:
// auto-generated (no vacation replies), X-Auto-Response-Suppress: All,
// and X-Driftwatch-Event, -Incident and -Severity for mail filters. The
// wire is 7-bit: non-ASCII subjects and display names are RFC 2047
// encoded-words (mime.QEncoding), the body is quoted-printable, header
// lines are folded near 76 characters. Every text from the incident is
// made one line without control characters before it is placed, so a
// CR or LF in a workspace name, an owner or a finding cannot add a
// header or end the message.
//
// The body: a headline (the incident's title and what this message
// reports), the event, workspace, class, severity (and how far failed
// remediations raised it), owner, team, since, run, labels, counts or the
// error, the findings (action, address, kind, attribute paths: never
// values; 50 at most, the rest counted), an update's delta, a
// remediation's outcome, and links to the status page and the
// remediation's run when server.external_url is set.
//
// # Transport and replies
//
// One SMTP session per message: connect (with tls: implicit, TLS from the
// first byte, SMTPS on 465), EHLO localhost (net/smtp's default name;
// submission servers check the credentials, not the EHLO name), STARTTLS (required otherwise: a server
// that does not offer it gets nothing, credentials least of all), AUTH
// PLAIN (LOGIN when it is all the server offers) when username_file and
// password_file are set, MAIL FROM (the From address), RCPT TO for every
// recipient, DATA, QUIT. The server's certificate is verified against the
// system's roots and ca_file's for the configured host. Notify makes one
// attempt, bounded by the timeout and the caller's context (either closes
// the connection); the outbox owns retrying.
//
// 4xx replies (421, 450, 451, 452, 454, ...) are retried, as are
// dropped connections, timeouts and a done context. 5xx replies (550,
// 552, 554, 535 authentication failed, ...) are permanent, and the error
// (a *ReplyError) carries the command and the server's reply, which is
// what the notifier's status shows. A refused recipient aborts the
// message for every recipient: all or none, so fixing the address and
// retrying doubles nothing. Also permanent: an untrusted certificate, a
// server that does not speak TLS where tls: implicit expects it, no
// STARTTLS offered, and credentials set for a server offering no AUTH
// PLAIN or LOGIN.
//
// # Secrets
//
// The username and password are read from files (a trailing line end is
// dropped; a password keeps its spaces), sent only inside TLS, and
// replaced by "[REDACTED]" (with their base64 forms, as AUTH sends them)
// in every error and log line, including a server reply that echoes
// them.
package email
