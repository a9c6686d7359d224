package silence

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/store"
)

func window(t *testing.T, name, sched, tz string, d time.Duration, match config.RouteMatch) Window {
	t.Helper()
	ws, err := Windows([]config.MaintenanceWindow{{Name: name, Schedule: sched, TimeZone: tz, Duration: config.Duration(d), Match: match}})
	require.NoError(t, err)
	return ws[0]
}

func TestWindowAt(t *testing.T) {
	// Saturdays 22:00 Berlin for 4h; 2026-03-28 is a Saturday (CET, UTC+1),
	// and the clocks go forward that night.
	w := window(t, "patching", "0 22 * * sat", "Europe/Berlin", 4*time.Hour, config.RouteMatch{Labels: map[string]string{"env": "prod"}})
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	start := time.Date(2026, 3, 28, 22, 0, 0, 0, berlin)

	on, _, next := w.At(start.Add(-time.Minute))
	require.False(t, on)
	require.True(t, next.Equal(start))

	on, ends, next := w.At(start)
	require.True(t, on, "a window is on from its start")
	require.True(t, ends.Equal(start.Add(4*time.Hour)), "4 real hours, across the DST change: %s", ends)
	require.True(t, next.Equal(time.Date(2026, 4, 4, 22, 0, 0, 0, berlin)))

	on, _, _ = w.At(start.Add(4 * time.Hour))
	require.False(t, on, "and off at its end")

	// Starts closer than the duration run into one window.
	hourly := window(t, "freeze", "0 * * * *", "", 90*time.Minute, config.RouteMatch{Workspaces: []string{"prod-*"}})
	at := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	on, ends, _ = hourly.At(at)
	require.True(t, on)
	require.False(t, ends.IsZero())
	require.True(t, ends.After(at))
}

func TestBookHeld(t *testing.T) {
	t0 := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	var b Book
	_, ok := b.Held("prod-net", nil, t0)
	require.False(t, ok, "the zero Book holds nothing")

	b.SetSilences([]store.Silence{
		{ID: "s1", Workspace: "prod-net", StartsAt: t0, EndsAt: t0.Add(time.Hour), CreatedBy: "alice", Comment: "migration"},
		{ID: "s2", Labels: map[string]string{"env": "prod", "tier": "db"}, StartsAt: t0.Add(time.Hour), EndsAt: t0.Add(3 * time.Hour)},
	})
	b.SetWindows([]Window{window(t, "noon", "0 12 * * *", "UTC", 2*time.Hour, config.RouteMatch{Workspaces: []string{"prod-*"}})})

	h, ok := b.Held("prod-net", map[string]string{"env": "prod"}, t0.Add(time.Minute))
	require.True(t, ok)
	require.Equal(t, "noon", h.Window, "the holder that ends last")
	require.True(t, h.Until.Equal(t0.Add(2*time.Hour)))

	h, ok = b.Held("dev-net", map[string]string{"env": "prod", "tier": "db"}, t0.Add(90*time.Minute))
	require.True(t, ok, "a label silence holds every workspace with all its labels")
	require.Equal(t, "s2", h.Silence.ID)
	_, ok = b.Held("dev-net", map[string]string{"env": "prod"}, t0.Add(90*time.Minute))
	require.False(t, ok, "one label is not all of them")
	_, ok = b.Held("dev-net", map[string]string{"env": "prod", "tier": "db"}, t0.Add(30*time.Minute))
	require.False(t, ok, "a future silence holds nothing yet")

	b.Put(store.Silence{ID: "s1", Workspace: "prod-net", StartsAt: t0, EndsAt: t0.Add(30 * time.Minute)})
	_, ok = b.Held("prod-net", nil, t0.Add(2*time.Hour+time.Minute))
	require.False(t, ok)
	b.Prune(t0.Add(2 * time.Hour))
	h, ok = b.Held("x", map[string]string{"env": "prod", "tier": "db"}, t0.Add(2*time.Hour))
	require.True(t, ok)
	require.Equal(t, "s2", h.Silence.ID, "pruning keeps what has not ended")
}
