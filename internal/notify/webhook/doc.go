// Package webhook delivers incidents as signed JSON to any HTTP endpoint:
// the vendor-neutral notifier, and the fallback for when OpsGenie goes
// away (2027-04-05). It owns a pure payload builder and signer, and a
// thin send through notify.Sender. Its settings are webhookcfg.Config
// (the notifiers[].webhook block, declared and checked there). It must
// not import config, store or another notify vendor package; only the
// notifiers factory constructs it.
//
// Every delivery is one POST of the payload, signed with HMAC-SHA256 over
// the timestamp and the body, with a stable X-Driftwatch-Delivery id for
// the receiver to deduplicate a resend.
//
// The request, how a receiver verifies a delivery, the responses and the
// secrets are in docs/alerts/webhook.md.
package webhook
