// Package notifiers builds the configured notifiers (config's notifiers:)
// from their implementations under internal/notify: one place that knows
// every notifier type, so adding one is a package under notify/ and a case
// here. It reads the notifiers' secret files through their constructors
// and opens no connection.
//
// What it must not touch: delivery (outbox), incidents (incident) or a
// notifier's wire format (its own package).
package notifiers
