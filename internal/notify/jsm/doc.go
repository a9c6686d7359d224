// Package jsm delivers incidents to Jira Service Management (JSM)
// alerts, OpsGenie's successor, through the integration API of a JSM
// "API" integration, with plain net/http (no SDK). It owns a pure
// request builder (buildRequests and the body builders: table tested,
// exact JSON) that encodes the alert body of package genie (shared with
// package opsgenie), and a thin send through notify.Sender. Its settings
// are jsmcfg.Config (the notifiers[].jsm block, declared and checked
// there). It must not import config, store, or any other notify vendor
// package (opsgenie included); only the notifiers factory constructs it.
//
// One incident is one alert, keyed by alias = the incident key, so every
// resend lands on the same alert; the state is returned unchanged, and
// nil after a resolve.
//
// The wire protocol, the mapping, the responses and the key are in
// docs/alerts/jsm.md; crash replays and resends, in
// docs/architecture/notify.md.
package jsm
