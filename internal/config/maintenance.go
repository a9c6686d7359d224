package config

import (
	"fmt"
	"path"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/driftwatch/driftwatch/internal/schedule/cronspec"
)

// MaintenanceWindow holds the notifications of the workspaces it matches
// while it is on: from each start its schedule gives, for Duration.
// Checks still run and incidents are recorded; what changed is sent once
// the window ends.
type MaintenanceWindow struct {
	Name string `yaml:"name"`
	// Schedule is a five-field cron expression of the window's starts
	// ("0 22 * * sat"), in TimeZone.
	Schedule string `yaml:"schedule"`
	// Duration is how long each window lasts (at most 7 days).
	Duration Duration `yaml:"duration"`
	// TimeZone is an IANA zone ("Europe/Berlin"; default UTC).
	TimeZone string `yaml:"time_zone"`
	// Match selects workspaces by name globs and labels (all must
	// match); at least one is required.
	Match RouteMatch `yaml:"match"`
}

// maxWindow bounds a maintenance window's duration.
const maxWindow = 7 * 24 * time.Hour

// Starts parses the window's schedule in its zone.
func (w MaintenanceWindow) Starts() (cron.Schedule, error) {
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return cronspec.Parse("CRON_TZ=" + tz + " " + w.Schedule)
}

func (c *Config) validateMaintenance(pos *positions) []error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, pos.errorf(key, format, args...)) }
	names := map[string]bool{}
	for i, w := range c.MaintenanceWindows {
		key := fmt.Sprintf("maintenance_windows[%d]", i)
		switch {
		case w.Name == "":
			add(key+".name", "required")
		case !dnsLabel.MatchString(w.Name):
			add(key+".name", "%q is not a DNS label (lowercase letters, digits and '-')", w.Name)
		case names[w.Name]:
			add(key+".name", "duplicate maintenance window %q", w.Name)
		}
		names[w.Name] = true
		if w.Schedule == "" {
			add(key+".schedule", "required")
		} else if w.TimeZone != "" && w.TimeZone != "UTC" && !validZone(w.TimeZone) {
			add(key+".time_zone", "unknown time zone %q (use an IANA name such as Europe/Berlin)", w.TimeZone)
		} else if _, err := w.Starts(); err != nil {
			add(key+".schedule", "%v", err)
		}
		switch d := time.Duration(w.Duration); {
		case d <= 0:
			add(key+".duration", "required, a positive duration such as 2h")
		case d > maxWindow:
			add(key+".duration", "at most %s", maxWindow)
		}
		if len(w.Match.Workspaces) == 0 && len(w.Match.Labels) == 0 {
			add(key+".match", "name workspaces or labels: a window over every workspace would hold every page")
		}
		for j, g := range w.Match.Workspaces {
			if _, err := path.Match(g, ""); err != nil {
				add(fmt.Sprintf("%s.match.workspaces[%d]", key, j), "invalid glob %q: %v", g, err)
			}
		}
	}
	return errs
}

func validZone(name string) bool {
	_, err := time.LoadLocation(name)
	return err == nil
}
