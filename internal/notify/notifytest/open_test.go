package notifytest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

func TestFiles(t *testing.T) {
	files := NewFiles(t)
	p := files.Write("key", "k\n")
	require.Equal(t, files.Path("key"), p)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "k\n", string(b))
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	_, err = os.Stat(files.Path("missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// OpenChecks passes for a New that begins with notify.Open, as every
// vendor's does.
func TestOpenChecks(t *testing.T) {
	files := NewFiles(t)
	good := OpenChecks{Vendor: "fake", Name: "f", Key: "key_file", New: func(file string, logger *slog.Logger) error {
		_, err := notify.Open("fake", "f", logger, func() error {
			if file == "" {
				return errors.New("key_file: required")
			}
			return nil
		}, notify.Secret{Key: "key_file", Path: file, Want: "one line", OK: func(string) bool { return true }})
		return err
	}}.Require(t, files, "secret")
	b, err := os.ReadFile(good)
	require.NoError(t, err)
	require.Equal(t, "secret\n", string(b), "the valid secret file")
}

func TestLifecycleEvents(t *testing.T) {
	require.Equal(t, []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventRemediation, notify.EventRenotify, notify.EventResolve}, LifecycleEvents)
}

type fakeConfig struct{ Name string }

func (c fakeConfig) Validate() error {
	if c.Name == "" {
		return errors.New("name: required")
	}
	return nil
}

func TestRequireValidate(t *testing.T) {
	edited := 0
	RequireValidate(t, fakeConfig{Name: "f"}, fakeConfig.Validate, []ValidateCase[fakeConfig]{
		{Name: "renamed", Edit: func(c *fakeConfig) { edited++; c.Name = "g" }},
		{Name: "empty", Edit: func(c *fakeConfig) { edited++; c.Name = "" }, Want: "name: required"},
	})
	require.Equal(t, 2, edited, "every case ran")
}

func TestOrDiscard(t *testing.T) {
	require.NotNil(t, OrDiscard(nil))
	require.False(t, OrDiscard(nil).Enabled(t.Context(), slog.LevelError))
	l, _ := CaptureLogger()
	require.Same(t, l, OrDiscard(l))
}

// refuser refuses every event but open, as a notifier's builder does.
type refuser struct{ sent int }

func (r *refuser) Name() string { return "fake" }

func (r *refuser) Notify(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	if m.Event != notify.EventOpen {
		return state, fmt.Errorf("fake: unknown event %q", m.Event)
	}
	r.sent++
	return nil, nil
}

func TestRequireUnknownEvent(t *testing.T) {
	r := &refuser{}
	RequireUnknownEvent(t, r, []byte(`{"k":1}`), func() int { return r.sent }, `fake: unknown event "snooze"`)
	require.Zero(t, r.sent)
}

func TestMustNew(t *testing.T) {
	var gotLogger *slog.Logger
	newFn := func(name string, _ *http.Client, logger *slog.Logger) (string, error) {
		gotLogger = logger
		return "made " + name, nil
	}
	require.Equal(t, "made x", MustNew(t, newFn, "x", nil, nil))
	require.NotNil(t, gotLogger, "a nil logger becomes one that discards")
}

// keeper keeps the state it is given, and drops it on a resolve.
type keeper struct{ got []notify.Event }

func (k *keeper) Name() string { return "keeper" }

func (k *keeper) Notify(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	k.got = append(k.got, m.Event)
	if m.Event == notify.EventResolve {
		return nil, nil
	}
	return state, nil
}

func TestNotifyLifecycle(t *testing.T) {
	k := &keeper{}
	sent := NotifyLifecycle(t, k, true)
	require.Equal(t, LifecycleEvents, k.got)
	require.Len(t, sent, len(LifecycleEvents))
	for i, m := range sent {
		require.Equal(t, SampleMessage(LifecycleEvents[i]), m)
	}
}

// alerts is an alert server's record: one alert a key, the last one kept.
type alerts struct{ all []string }

func (a *alerts) Alerts() []string { return a.all }

func (a *alerts) Alert(key string) (string, bool) {
	if len(a.all) == 0 {
		return "", false
	}
	return key + ":" + a.all[len(a.all)-1], true
}

// opener records an alert per open message.
type opener struct{ srv *alerts }

func (o opener) Name() string { return "opener" }

func (o opener) Notify(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	o.srv.all = append(o.srv.all, string(m.Event))
	return state, nil
}

func TestRequireReopens(t *testing.T) {
	srv := &alerts{all: []string{"closed"}}
	RequireReopens(t, opener{srv}, srv, "k", func(s string) string { return s }, "k:open")
	require.Equal(t, []string{"closed", "open"}, srv.all)
}

func TestStart(t *testing.T) {
	newServer := func(testing.TB) *alerts { return &alerts{} }
	var gotLogger *slog.Logger
	newNotifier := func(_ *testing.T, srv *alerts, logger *slog.Logger) opener { gotLogger = logger; return opener{srv} }
	srv, n := Start(t, newServer, newNotifier)
	require.Same(t, srv, n.srv)
	require.Nil(t, gotLogger)

	srv, n, logs := StartLogged(t, newServer, newNotifier)
	require.Same(t, srv, n.srv)
	gotLogger.Info("hello")
	require.Contains(t, logs(), "hello")
}

func TestNewOf(t *testing.T) {
	var got string
	newFn := func(cfg fakeConfig, hc *http.Client, _ *slog.Logger) (int, error) {
		require.Nil(t, hc)
		got = cfg.Name
		return 0, cfg.Validate()
	}
	newWith := NewOf(newFn, func(file string) fakeConfig { return fakeConfig{Name: file} })
	require.NoError(t, newWith("/run/key", nil))
	require.Equal(t, "/run/key", got)
	require.EqualError(t, newWith("", nil), "name: required")
}

func TestErroredAndForbidden(t *testing.T) {
	m := Errored(SampleMessage(notify.EventOpen), "init failed")
	require.Equal(t, notify.ClassErrored, m.Incident.Class)
	require.Equal(t, "init failed", m.Incident.Error)
	require.Empty(t, m.Incident.Findings)
	require.Zero(t, m.Incident.Counts)

	f := drift.Finding{Kind: drift.KindForbidden, Address: "kubernetes_manifest.app"}
	m = Forbidden(SampleMessage(notify.EventOpen), f)
	require.Equal(t, notify.ClassForbidden, m.Incident.Class)
	require.Equal(t, []drift.Finding{f}, m.Incident.Findings)
	require.Equal(t, drift.CountFindings([]drift.Finding{f}), m.Incident.Counts)
}

// AwaitingApproval is a valid remediation message proposed in the mode
// asked for, awaiting approval for a day, with nothing applied yet.
func TestAwaitingApproval(t *testing.T) {
	m := AwaitingApproval("approve")
	require.NoError(t, m.Check())
	require.Equal(t, notify.EventRemediation, m.Event)
	require.Equal(t, &notify.Remediation{ID: "rem-0007", Mode: "approve", Result: notify.RemediationAwaitingApproval,
		Resources: 1, ExpiresAt: time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)}, m.Remediation)
	require.Equal(t, notify.SeverityHigh, m.Incident.Severity)
	require.Zero(t, m.Incident.Escalated)
	require.Equal(t, "auto", AwaitingApproval("auto").Remediation.Mode)
}

// MustJSON is the JSON a request body would carry.
func TestMustJSON(t *testing.T) {
	require.JSONEq(t, `{"labels":["driftwatch"],"title":"Drift"}`, MustJSON(t, map[string]any{"title": "Drift", "labels": []string{"driftwatch"}}))
}
