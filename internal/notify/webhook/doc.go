// Package webhook delivers incidents as signed JSON to any HTTP endpoint:
// the vendor-neutral notifier, and the fallback for when OpsGenie goes
// away (2027-04-05). It owns its Config, a pure payload builder and
// signer, and a thin send; it must not import config, store or another
// notify vendor package.
//
// # Request
//
// Each message is one POST of application/json:
//
//	{
//	  "version": 1,
//	  "id": "<message id>",
//	  "event": "open" | "update" | "resolve" | "renotify" | "remediation",
//	  "incident": {
//	    "key": "drift-prod-network-3f9a2c", "workspace": "prod/network",
//	    "class": "drift" | "forbidden" | "errored",
//	    "severity": "critical" | "high" | "moderate" | "low" | "info",
//	    "owner": "...", "team": "...", "labels": {"env": "prod"},
//	    "since": "2026-11-03T09:00:00Z",
//	    "counts": {"drift": 1, "pending": 1, "forbidden": 0, "noise": 0, "hygiene": 0},
//	    "findings": [{"kind": "drift", "address": "aws_security_group.web",
//	                  "type": "aws_security_group", "action": "update",
//	                  "attributes": ["ingress"]}],
//	    "findings_truncated": true,   // only when over 1000 findings
//	    "error": "...", "run_id": "...", "url": "https://...",
//	    "escalated": 1                // only when failed remediations raised the severity
//	    "reason": "workspace removed" // only on a resolve that was not a clean run
//	  },
//	  "delta": {"added": [...], "removed": [...], "changed": [...]} | null,
//	  "remediation": {                // event "remediation" only
//	    "id": "...", "mode": "approve" | "auto",
//	    "result": "awaiting_approval" | "approved" | "applied" | "failed" |
//	              "verification_failed" | "refused",
//	    "reason": "...", "resources": 2, "apply_run_id": "...",
//	    "expires_at": "2026-11-04T10:00:00Z",   // awaiting_approval only
//	    "url": "https://.../runs/<apply run id>"
//	  },
//	  "at": "2026-11-03T10:00:00Z"
//	}
//
// Findings carry addresses, actions and attribute paths, never values.
//
// Headers:
//
//	X-Driftwatch-Event:     the event
//	X-Driftwatch-Delivery:  the message id; the same on every retry of a
//	                        message, so receivers de-duplicate on it
//	X-Driftwatch-Timestamp: Unix seconds when this attempt was signed
//	X-Driftwatch-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// plus the configured Headers (e.g. an Authorization token for a gateway).
//
// # Verifying a delivery (receivers)
//
// As with Stripe's and GitHub's webhooks:
//
//  1. Read the raw body before parsing it.
//  2. Compute HMAC-SHA256 with the shared secret over the bytes of the
//     X-Driftwatch-Timestamp value, a ".", and the raw body; hex-encode it
//     and compare it with the X-Driftwatch-Signature value after "sha256="
//     in constant time (hmac.Equal, crypto.timingSafeEqual,
//     hmac.compare_digest).
//  3. Reject timestamps more than 5 minutes from your clock: the signature
//     covers the timestamp, so this bounds replays.
//  4. De-duplicate on X-Driftwatch-Delivery: a delivery may arrive more
//     than once (at-least-once: a timeout after the receiver answered is
//     retried), with a fresh timestamp and signature but the same body.
//
// Verify does steps 1 to 3 for Go receivers.
//
// # Responses
//
// 2xx is delivered. 408, 429 and 5xx are retried by the outbox (after
// Retry-After if sent), as are network errors and timeouts. Any other
// status, redirects included (they are not followed, so a signed body
// never goes where it was not configured to), is permanent.
//
// # Secrets
//
// The URL (it often embeds a token), the signing secret and header values
// are read from files or config and never appear in errors or logs; a
// response body is never quoted, since a receiver may echo what it got.
// The URL should be https: a plain-http URL to anything but loopback is
// allowed, with a warning at start-up.
package webhook
