package pages

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestHoldFor(t *testing.T) {
	at := func(h float64) time.Time { return testNow.Add(time.Duration(h * float64(time.Hour))) }
	sil := func(id, ws string, from, until float64) store.Silence {
		return store.Silence{ID: id, Workspace: ws, StartsAt: at(from), EndsAt: at(until)}
	}
	labels := map[string]string{"env": "prod", "tier": "network"}
	for _, c := range []struct {
		name        string
		sils        []store.Silence
		wins        []control.MaintenanceWindow
		active      bool
		from, until float64
		spans       []string
		none        bool
	}{
		{name: "nothing", none: true},
		{name: "ended", sils: []store.Silence{sil("a", "net", -3, -1)}, none: true},
		{name: "other workspace", sils: []store.Silence{sil("a", "web", -1, 1)}, none: true},
		{name: "active", sils: []store.Silence{sil("a", "net", -1, 2)}, active: true, from: -1, until: 2, spans: []string{"a"}},
		{name: "by labels", sils: []store.Silence{{ID: "l", Labels: map[string]string{"env": "prod"}, StartsAt: at(0), EndsAt: at(1)}},
			active: true, from: 0, until: 1, spans: []string{"l"}},
		{name: "labels must all match", sils: []store.Silence{{ID: "l", Labels: map[string]string{"env": "prod", "team": "x"}, StartsAt: at(0), EndsAt: at(1)}}, none: true},
		{name: "chained", sils: []store.Silence{sil("b", "net", 2, 5), sil("a", "net", -1, 2), sil("c", "net", 6, 8)},
			active: true, from: -1, until: 5, spans: []string{"a", "b"}},
		{name: "future only", sils: []store.Silence{sil("c", "net", 6, 8), sil("b", "net", 2, 5)}, from: 2, until: 5, spans: []string{"b"}},
		{name: "window on", wins: []control.MaintenanceWindow{{Name: "w", Workspaces: []string{"n*"}, Duration: 2 * time.Hour, Active: true, Ends: at(1), NextStart: at(23)}},
			active: true, from: -1, until: 1, spans: []string{"w"}},
		{name: "window off", wins: []control.MaintenanceWindow{{Name: "w", Labels: map[string]string{"tier": "network"}, Duration: time.Hour, NextStart: at(4)}},
			from: 4, until: 5, spans: []string{"w"}},
		{name: "window elsewhere", wins: []control.MaintenanceWindow{{Name: "w", Workspaces: []string{"web-*"}, Duration: time.Hour, Active: true, Ends: at(1)}}, none: true},
		{name: "window glob and labels", wins: []control.MaintenanceWindow{{Name: "w", Workspaces: []string{"net"}, Labels: map[string]string{"env": "staging"}, Duration: time.Hour, Active: true, Ends: at(1)}}, none: true},
		{name: "silence into window", sils: []store.Silence{sil("a", "net", -1, 4)},
			wins:   []control.MaintenanceWindow{{Name: "w", Duration: 2 * time.Hour, NextStart: at(3)}},
			active: true, from: -1, until: 5, spans: []string{"a", "w"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := holdFor(testNow, "net", labels, c.sils, c.wins)
			if c.none {
				require.Nil(t, h)
				return
			}
			require.NotNil(t, h)
			require.Equal(t, c.active, h.Active)
			require.Equal(t, at(c.from), h.From)
			require.Equal(t, at(c.until), h.Until)
			var ids []string
			for _, sp := range h.Spans {
				if sp.Silence != nil {
					ids = append(ids, sp.Silence.ID)
				} else {
					ids = append(ids, sp.Window.Name)
				}
			}
			require.Equal(t, c.spans, ids)
		})
	}
}
