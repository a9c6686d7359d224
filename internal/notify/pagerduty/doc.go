// Package pagerduty delivers incidents to a PagerDuty service through the
// Events API v2, with plain net/http (no SDK) and notify.Sender. It owns
// a pure event builder (buildEvent and encode: table tested, exact JSON)
// and a thin send. Its settings are pagerdutycfg.Config (the
// notifiers[].pagerduty block, declared and checked there). It must not
// import config, store, or any other notify vendor package; only the
// notifiers factory constructs it.
//
// One incident is one PagerDuty alert, keyed by dedup_key = the incident
// key: a resent trigger is de-duplicated into the same alert, a resent
// resolve is dropped.
//
// The mapping, the responses and the routing key are in
// docs/alerts/pagerduty.md.
package pagerduty
