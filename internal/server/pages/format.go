package pages

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// How the pages write times, durations and numbers.

// absTime formats t for a title attribute: "2026-01-02 15:04:05 UTC".
func absTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// relTime says how long ago (or in how long) t is from now, to the
// coarsest unit that keeps it readable: "45s ago", "12m ago", "3h ago",
// "5d ago", "in 20m". Beyond 60 days it gives the date.
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second:
		if future {
			return "now"
		}
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 10*time.Hour && d%time.Hour >= time.Minute:
		s = fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 60*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// overdueGrace is how late a next run may be before the page calls it
// overdue (a run waits for a free slot under the concurrency cap).
const overdueGrace = 5 * time.Minute

// overdue reports whether a run planned for next should long have started:
// the scheduler is stuck or the queue is saturated.
func overdue(now, next time.Time) bool {
	return !next.IsZero() && now.Sub(next) > overdueGrace
}

// fmtDuration formats a run's duration: "850ms", "42s", "3m 05s", "1h 02m".
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm %02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh %02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

func fmtRunDuration(r store.Run) string {
	d, ok := view.RunDuration(r)
	if !ok {
		return "—"
	}
	return fmtDuration(d)
}
