package schedule

import (
	"github.com/robfig/cron/v3"

	"github.com/driftwatch/driftwatch/internal/schedule/cronspec"
)

// ParseSpec parses a schedule: a standard five-field cron expression, a
// descriptor or "@every <duration>", optionally prefixed by
// "CRON_TZ=<IANA zone> " or "TZ=<IANA zone> " (cronspec.Parse, the one
// implementation, which config validation uses too). "@every" must be at
// least one minute.
func ParseSpec(spec string) (cron.Schedule, error) {
	return cronspec.Parse(spec)
}

// ParseSpecSubMinute is ParseSpec with "@every" allowed down to one second
// (the daemon's allow_sub_minute_schedules, for demos and tests).
func ParseSpecSubMinute(spec string) (cron.Schedule, error) {
	return cronspec.ParseSubMinute(spec)
}

// parseSpec is how the Scheduler parses a job's spec (allowSubMinute:
// Options.AllowSubMinute).
func parseSpec(spec string, allowSubMinute bool) (cron.Schedule, error) {
	return cronspec.ParseWith(spec, allowSubMinute)
}
