// Package opsgenie delivers incidents to OpsGenie's Alert API v2 through
// github.com/opsgenie/opsgenie-go-sdk-v2. It owns a pure request builder
// (buildCreate, buildNote, buildPriority, buildClose: table tested) that
// wraps the alert body of package genie (shared with package jsm) into
// the SDK's requests, and a thin send; an error answer is classified by
// notify.Sender.StatusError. Its settings are opsgeniecfg.Config (the
// notifiers[].opsgenie block, declared and checked there). It must not
// import config, store, or any other notify vendor package; only the
// notifiers factory constructs it.
//
// One incident is one alert, keyed by alias = the incident key. The
// SDK's retries are off (the outbox retries), its requests are
// asynchronous (the notifier polls the request's status), and its logger
// is logrus (logger.go adapts it to slog): the traps this package works
// around are in docs/architecture/notify.md; the mapping and OpsGenie's
// end of support, in docs/alerts/opsgenie.md.
package opsgenie
