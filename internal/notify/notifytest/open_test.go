package notifytest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

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
	good := files.Write("good", "secret\n")
	OpenChecks{Vendor: "fake", Name: "f", Key: "key_file", New: func(file string, logger *slog.Logger) error {
		_, err := notify.Open("fake", "f", logger, func() error {
			if file == "" {
				return errors.New("key_file: required")
			}
			return nil
		}, notify.Secret{Key: "key_file", Path: file, Want: "one line", OK: func(string) bool { return true }})
		return err
	}}.Require(t, files, good)
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
		{Name: "valid", Edit: func(*fakeConfig) { edited++ }},
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
