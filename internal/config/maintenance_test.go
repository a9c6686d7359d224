package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
)

func TestMaintenanceWindows(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
maintenance_windows:
  - name: patching
    schedule: "0 22 * * sat"
    duration: 4h
    time_zone: Europe/Berlin
    match: { labels: { env: prod } }
`))
	require.NoError(t, err)
	w := cfg.MaintenanceWindows[0]
	require.Equal(t, config.Duration(4*time.Hour), w.Duration)
	s, err := w.Starts()
	require.NoError(t, err)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	require.True(t, s.Next(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)).Equal(time.Date(2026, 3, 7, 22, 0, 0, 0, berlin)),
		"starts in its time zone")

	file := filepath.Join(dir, "driftwatch.yaml")
	for name, c := range map[string]struct{ yaml, want string }{
		"no schedule": {"maintenance_windows:\n  - name: w\n    duration: 1h\n    match: { labels: { a: b } }\n",
			"driftwatch.yaml:2: maintenance_windows[0].schedule: required"},
		"bad schedule": {"maintenance_windows:\n  - name: w\n    schedule: \"61 * * * *\"\n    duration: 1h\n    match: { labels: { a: b } }\n",
			"driftwatch.yaml:3: maintenance_windows[0].schedule:"},
		"bad zone": {"maintenance_windows:\n  - name: w\n    schedule: \"0 1 * * *\"\n    time_zone: Mars/Olympus\n    duration: 1h\n    match: { labels: { a: b } }\n",
			`driftwatch.yaml:4: maintenance_windows[0].time_zone: unknown time zone "Mars/Olympus"`},
		"no duration": {"maintenance_windows:\n  - name: w\n    schedule: \"0 1 * * *\"\n    match: { labels: { a: b } }\n",
			"maintenance_windows[0].duration: required, a positive duration such as 2h"},
		"too long": {"maintenance_windows:\n  - name: w\n    schedule: \"0 1 * * *\"\n    duration: 200h\n    match: { labels: { a: b } }\n",
			"maintenance_windows[0].duration: at most 168h0m0s"},
		"matches everything": {"maintenance_windows:\n  - name: w\n    schedule: \"0 1 * * *\"\n    duration: 1h\n",
			"maintenance_windows[0].match: name workspaces or labels"},
		"duplicate": {"maintenance_windows:\n  - { name: w, schedule: \"0 1 * * *\", duration: 1h, match: { labels: { a: b } } }\n  - { name: w, schedule: \"0 2 * * *\", duration: 1h, match: { labels: { a: b } } }\n",
			`driftwatch.yaml:3: maintenance_windows[1].name: duplicate maintenance window "w"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load(file, []byte(c.yaml))
			require.Error(t, err)
			require.Contains(t, strings.ReplaceAll(err.Error(), dir+"/", ""), c.want)
		})
	}
}
