// Package notifiers builds the configured notifiers from their settings
// blocks (notifycfg.Spec: config's notifiers:, as app hands them over
// through config.NotifierSpecs): one place that knows every notifier
// type, so adding one is a package under notify/ with its <type>cfg
// settings, and a case here. Reload rebuilds them from a reloaded
// config's blocks for the outbox (inventory.Notifiers). It reads the
// notifiers' secret files through their constructors and opens no
// connection.
//
// What it must not touch: config (it is handed the blocks), delivery
// (outbox), incidents (incident) or a notifier's wire format (its own
// package).
package notifiers
