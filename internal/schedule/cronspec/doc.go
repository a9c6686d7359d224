// Package cronspec parses and validates schedule specs: five cron fields,
// descriptors (@hourly, "@every 30m", ...) and an optional "CRON_TZ=Zone "
// or "TZ=Zone " prefix (see Parse). It is the one implementation, shared by
// the scheduler (schedule.ParseSpec forwards here) and config validation,
// and a leaf: it imports no other internal package, so internal/config can
// check a schedule exactly as the scheduler will parse it.
package cronspec
