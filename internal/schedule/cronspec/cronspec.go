package cronspec

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// specParser accepts exactly the standard five fields plus descriptors.
// Seconds are deliberately not accepted: a terraform plan takes minutes, so a
// per-second cron field would only ever produce skipped slots.
var specParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// neverFiresRef is the instant Parse probes a spec from to reject specs
// that can never fire (for example "0 0 30 2 *"). robfig's Next returns the
// zero time when it finds no activation within five years; every valid spec,
// including February 29, fires within five years of any instant.
var neverFiresRef = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// minEvery is the smallest @every interval Parse accepts (ParseSubMinute:
// one second).
const minEvery = time.Minute

// Parse parses a schedule: a standard five-field cron expression
// ("*/15 * * * *", "0 9 * * mon-fri"), a descriptor (@yearly, @annually,
// @monthly, @weekly, @daily, @midnight, @hourly, "@every <duration>"), each
// optionally prefixed by "CRON_TZ=<IANA zone> " or "TZ=<IANA zone> ".
//
// A spec without a zone prefix is evaluated in the location of the time
// passed to Next (the Scheduler passes its Options.Location). "@every" is
// relative to the previous slot and ignores any zone prefix. "@every" must be
// a whole number of seconds and at least one minute; ParseSubMinute lowers
// that bound to one second (the Scheduler's Options.AllowSubMinute).
//
// Parse never panics: robfig/cron v3.0.1 panics on a zone prefix without
// a following schedule ("CRON_TZ=UTC"), so the prefix is parsed here and the
// library call is guarded by recover. Errors name the spec.
func Parse(spec string) (cron.Schedule, error) {
	return ParseWith(spec, false)
}

// ParseSubMinute is Parse with "@every" allowed down to one second
// (the daemon's allow_sub_minute_schedules, for demos and tests).
func ParseSubMinute(spec string) (cron.Schedule, error) {
	return ParseWith(spec, true)
}

// ParseWith is Parse, or ParseSubMinute when allowSubMinute is set.
func ParseWith(spec string, allowSubMinute bool) (cron.Schedule, error) {
	sched, err := parseSpecRaw(spec, allowSubMinute)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	return sched, nil
}

func parseSpecRaw(spec string, allowSubMinute bool) (sched cron.Schedule, err error) {
	defer func() {
		// Belt and braces: the known panics are avoided below, but the
		// library is unmaintained and a config typo must not crash the
		// daemon.
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule: %v", r)
		}
	}()

	rest := strings.TrimSpace(spec)
	if rest == "" {
		return nil, errors.New("empty schedule")
	}
	var loc *time.Location
	if prefix, ok := tzPrefix(rest); ok {
		i := strings.IndexFunc(rest, unicode.IsSpace)
		if i < 0 {
			return nil, fmt.Errorf("%s must be followed by a space and a schedule", prefix)
		}
		name := rest[len(prefix):i]
		if name == "" {
			return nil, fmt.Errorf("%s needs a time zone name", prefix)
		}
		if loc, err = time.LoadLocation(name); err != nil {
			return nil, fmt.Errorf("time zone %q: %w", name, err)
		}
		rest = strings.TrimSpace(rest[i:])
		if _, again := tzPrefix(rest); again {
			return nil, errors.New("more than one time zone prefix")
		}
	}

	if d, ok := strings.CutPrefix(rest, "@every"); ok && (d == "" || d[0] == ' ') {
		if err := checkEvery(strings.TrimSpace(d), allowSubMinute); err != nil {
			return nil, err
		}
	}

	sched, err = specParser.Parse(rest)
	if err != nil {
		return nil, err
	}
	if ss, ok := sched.(*cron.SpecSchedule); ok {
		if loc != nil {
			ss.Location = loc
		}
		if ss.Next(neverFiresRef).IsZero() {
			return nil, errors.New("never fires (no such date)")
		}
	}
	return sched, nil
}

func tzPrefix(s string) (string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(s, p) {
			return p, true
		}
	}
	return "", false
}

// checkEvery validates the duration of an @every descriptor before robfig
// sees it: robfig silently rounds sub-second and fractional intervals and
// turns zero or negative ones into one second.
func checkEvery(s string, allowSubMinute bool) error {
	if s == "" {
		return errors.New("@every needs a duration, like \"@every 30m\"")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("@every: %w", err)
	}
	switch {
	case d <= 0:
		return fmt.Errorf("@every %s: interval must be positive", s)
	case d%time.Second != 0:
		return fmt.Errorf("@every %s: interval must be a whole number of seconds", s)
	case d < minEvery && !allowSubMinute:
		return fmt.Errorf("@every %s: interval must be at least %s", s, minEvery)
	}
	return nil
}
