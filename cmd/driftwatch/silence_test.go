package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// silenceNow is the clock of the silence tests: the server's and the
// fake daemon's.
var silenceNow = time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC)

// fakeSilences is the daemon's silences, in memory, at silenceNow, with
// one maintenance window on; it records who expired what.
type fakeSilences struct {
	logsControl
	mu      sync.Mutex
	n       int
	sils    []store.Silence
	expired []string
}

func (f *fakeSilences) Silences(context.Context) ([]store.Silence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Silence
	for _, s := range f.sils {
		if s.EndsAt.After(silenceNow) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakeSilences) AddSilence(_ context.Context, req server.SilenceRequest) (store.Silence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Workspace != "" && req.Workspace != "net" {
		return store.Silence{}, server.ErrUnknownWorkspace
	}
	if req.For > 7*24*time.Hour {
		return store.Silence{}, &server.SilenceError{Reason: "for: at most 168h"}
	}
	f.n++
	start := req.StartsAt
	if start.IsZero() {
		start = silenceNow
	}
	s := store.Silence{ID: fmt.Sprintf("sil-%d", f.n), Workspace: req.Workspace, Labels: req.Labels, StartsAt: start,
		EndsAt: start.Add(req.For), Comment: req.Comment, CreatedBy: req.CreatedBy, CreatedAt: silenceNow}
	f.sils = append(f.sils, s)
	return s, nil
}

func (f *fakeSilences) ExpireSilence(_ context.Context, id, by string) (store.Silence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = append(f.expired, id+" by "+by)
	for i, s := range f.sils {
		if s.ID == id {
			f.sils[i].EndsAt = silenceNow
			return f.sils[i], nil
		}
	}
	return store.Silence{}, store.ErrNotFound
}

func (f *fakeSilences) MaintenanceWindows(time.Time) []server.MaintenanceWindow {
	return []server.MaintenanceWindow{
		{Name: "patching", Workspaces: []string{"prod-*"}, Schedule: "0 2 * * 6", TimeZone: "Europe/Berlin", Duration: 2 * time.Hour,
			Active: true, Ends: silenceNow.Add(time.Hour), NextStart: silenceNow.Add(167 * time.Hour)},
		{Name: "nightly", Labels: map[string]string{"tier": "db"}, Schedule: "0 23 * * *", TimeZone: "UTC", Duration: 30 * time.Minute,
			NextStart: silenceNow.Add(20 * time.Hour)},
	}
}

// silenceServer is the real server over f, with token "tok".
func silenceServer(t *testing.T, f *fakeSilences) (url, tokenFile string) {
	return daemonServer(t, server.Options{Control: f, Now: func() time.Time { return silenceNow }})
}

// daemonServer is the real server with o's Control, Groups, clock and
// auth settings over a sqlite store; its API token is "tok", in
// tokenFile.
func daemonServer(t *testing.T, o server.Options) (url, tokenFile string) {
	o.Logger = slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), o.Logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	tokenFile = filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("tok\n"), 0o600))
	o.Store, o.Gatherer, o.Config.TokenFile = st, prometheus.NewRegistry(), tokenFile
	srv, err := server.New(o)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, tokenFile
}

// `driftwatch silence` adds, lists and expires silences on the daemon:
// one line on stdout and exit 0; a refusal is the daemon's reason on
// stderr and exit 1; --by defaults to $USER.
func TestSilenceCmd(t *testing.T) {
	t.Setenv("USER", "alice")
	f := &fakeSilences{}
	srv, tok := silenceServer(t, f)
	bad := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.WriteFile(bad, []byte("nope-CANARY"), 0o600))
	for _, c := range []struct {
		args      []string
		code      int
		out, errb string
	}{
		{[]string{"silence", "net", "--for", "4h", "--comment", "DB migration", "--server", srv, "--token-file", tok}, 0,
			"silence sil-1: notifications of workspace net held until 2026-03-14T07:00:00Z (by token:api (claimed: alice): DB migration)\n", ""},
		{[]string{"silence", "--label", "env=prod", "--label", "tier=db", "--for", "90m", "--starts-at", "2026-03-14T22:00:00+01:00",
			"--comment", "game day", "--by", "bob", "--server", srv, "--token-file", tok}, 0,
			"silence sil-2: notifications of workspaces with env=prod,tier=db held from 2026-03-14T21:00:00Z until 2026-03-14T22:30:00Z (by token:api (claimed: bob): game day)\n", ""},
		{[]string{"silence", "--list", "--server", srv}, 0, "" +
			"SILENCE  STATE      MATCHES           FROM                  UNTIL                 BY                          COMMENT\n" +
			"sil-1    active     net               2026-03-14T03:00:00Z  2026-03-14T07:00:00Z  token:api (claimed: alice)  DB migration\n" +
			"sil-2    scheduled  env=prod,tier=db  2026-03-14T21:00:00Z  2026-03-14T22:30:00Z  token:api (claimed: bob)    game day\n" +
			"\n" +
			"WINDOW    STATE                           MATCHES  SCHEDULE                   DURATION\n" +
			"patching  on until 2026-03-14T04:00:00Z   prod-*   0 2 * * 6 (Europe/Berlin)  2h0m0s\n" +
			"nightly   off, next 2026-03-14T23:00:00Z  tier=db  0 23 * * * (UTC)           30m0s\n", ""},
		{[]string{"silence", "--expire", "sil-1", "--server", srv, "--token-file", tok}, 0,
			"silence sil-1 expired: notifications of workspace net are sent again (what it held goes out now)\n", ""},
		{[]string{"silence", "--expire", "sil-9", "--server", srv, "--token-file", tok}, 1, "",
			"driftwatch: silence --expire sil-9: 404 Not Found: unknown silence\n"},
		{[]string{"silence", "web", "--for", "4h", "--comment", "x", "--server", srv, "--token-file", tok}, 1, "",
			"driftwatch: silence workspace web: 404 Not Found: unknown workspace\n"},
		{[]string{"silence", "net", "--for", "800h", "--comment", "x", "--server", srv, "--token-file", tok}, 1, "",
			"driftwatch: silence workspace net: 400 Bad Request: for: at most 168h\n"},
		{[]string{"silence", "net", "--for", "4h", "--comment", "x", "--server", srv, "--token-file", bad}, 1, "",
			"driftwatch: silence workspace net: 401 Unauthorized: invalid bearer token: the daemon at " + srv +
				" rejected the token in " + bad + " (it must hold the daemon's server.token_file token)\n"},
		{[]string{"silence", "net", "--server", srv, "--token-file", tok}, 1, "",
			"driftwatch: --for is required: how long to hold notifications, e.g. --for 4h\n" +
				"driftwatch: --comment is required: why (on-call reads it), e.g. --comment \"DB migration, CHG-1234\"\n"},
		{[]string{"silence", "net", "--label", "env=prod", "--for", "1h", "--comment", "x", "--starts-at", "tonight"}, 1, "",
			"driftwatch: a silence is for a WORKSPACE or for --label, not both\n" +
				"driftwatch: --starts-at \"tonight\" must be an RFC 3339 time, e.g. 2026-03-14T22:00:00Z\n" +
				"driftwatch: --token-file is required\n"},
		{[]string{"silence", "--label", "env", "--for", "1h", "--comment", "x", "--token-file", tok}, 1, "",
			"driftwatch: --label: invalid label selector \"env\" (want key=value)\n"},
		{[]string{"silence", "--list", "--expire", "sil-1"}, 1, "", "driftwatch: --list takes no workspace, --label or --expire\n"},
		{[]string{"silence", "--expire", "sil-1"}, 1, "", "driftwatch: --token-file is required\n"},
		{[]string{"silence", "net", "extra"}, 1, "", "driftwatch: unexpected argument \"extra\"\n"},
		{[]string{"silence"}, 1, "", "driftwatch: " + silenceUsage + "\n"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, c.code, run(c.args, &out, &errb), "%v: %s", c.args, errb.String())
		require.Equal(t, c.out, out.String(), c.args)
		require.Equal(t, c.errb, errb.String(), c.args)
	}
	require.Equal(t, []string{"sil-1 by token:api (claimed: alice)", "sil-9 by token:api (claimed: alice)"}, f.expired)

	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"silence", "--list", "--format", "json", "--server", srv}, &out, &errb))
	require.JSONEq(t, `{
	  "silences": [
	    {"id": "sil-2", "workspace": "", "labels": {"env": "prod", "tier": "db"}, "starts_at": "2026-03-14T21:00:00Z",
	     "ends_at": "2026-03-14T22:30:00Z", "comment": "game day", "created_by": "token:api (claimed: bob)", "created_at": "2026-03-14T03:00:00Z", "active": false}
	  ],
	  "maintenance_windows": [
	    {"name": "patching", "workspaces": ["prod-*"], "labels": {}, "schedule": "0 2 * * 6", "time_zone": "Europe/Berlin",
	     "duration": "2h0m0s", "active": true, "ends": "2026-03-14T04:00:00Z", "next_start": "2026-03-21T02:00:00Z"},
	    {"name": "nightly", "workspaces": [], "labels": {"tier": "db"}, "schedule": "0 23 * * *", "time_zone": "UTC",
	     "duration": "30m0s", "active": false, "ends": null, "next_start": "2026-03-14T23:00:00Z"}
	  ]
	}`, out.String())
}

// A daemon without silences says so.
func TestSilenceCmdNotSupported(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	srv, err := server.New(server.Options{Store: st, Control: logsControl{}, Gatherer: prometheus.NewRegistry(), Logger: logger})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"silence", "--list", "--server", ts.URL}, &out, &errb))
	require.Equal(t, "driftwatch: silence --list: 501 Not Implemented: silences are not available on this driftwatch (the daemon at "+
		ts.URL+" is a version without silences)\n", errb.String())
}
