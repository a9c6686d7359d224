package notifytest

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// LifecycleEvents are the events of one incident in the order they come:
// open, update, remediation, renotify, resolve.
var LifecycleEvents = []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventRemediation, notify.EventRenotify, notify.EventResolve}

// NotifyStateless sends m through a notifier that keeps no state of its
// own: a call of saveState fails the test.
func NotifyStateless(t *testing.T, n notify.Notifier, m notify.Message, state []byte) ([]byte, error) {
	t.Helper()
	return n.Notify(t.Context(), m, state, func([]byte) error {
		t.Fatalf("%s must not need saveState", n.Name())
		return nil
	})
}

// NotifyLifecycle sends n the sample message of each of LifecycleEvents,
// in order, with the state {"kept":true}: each call succeeds and returns
// that state unchanged (n keeps no state of its own), or nil after the
// resolve when dropsOnResolve. It returns the messages sent.
func NotifyLifecycle(t *testing.T, n notify.Notifier, dropsOnResolve bool) []notify.Message {
	t.Helper()
	const kept = `{"kept":true}`
	var sent []notify.Message
	for _, ev := range LifecycleEvents {
		m := SampleMessage(ev)
		state, err := NotifyStateless(t, n, m, []byte(kept))
		require.NoError(t, err, ev)
		if dropsOnResolve && ev == notify.EventResolve {
			require.Nil(t, state, "the resolve drops the state")
		} else {
			require.JSONEq(t, kept, string(state), "%s keeps no state of its own", n.Name())
		}
		sent = append(sent, m)
	}
	return sent
}

// RequireReopens sends n the open message again once srv's one alert of
// key is closed or resolved: srv then holds a second alert, and the
// alert of key is the new one, its status (what status reads) want.
func RequireReopens[A any](t *testing.T, n notify.Notifier, srv interface {
	Alerts() []A
	Alert(key string) (A, bool)
}, key string, status func(A) string, want string) {
	t.Helper()
	_, err := NotifyStateless(t, n, SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.Len(t, srv.Alerts(), 2, "a new alert")
	got, ok := srv.Alert(key)
	require.True(t, ok)
	require.Equal(t, want, status(got))
}

// Start is a vendor test's fresh server from newServer and the notifier
// newNotifier makes for it (nil logger), as ConformanceOf pairs them.
func Start[S any, N notify.Notifier](t *testing.T, newServer func(testing.TB) S, newNotifier func(*testing.T, S, *slog.Logger) N) (S, N) {
	t.Helper()
	srv := newServer(t)
	return srv, newNotifier(t, srv, nil)
}

// Files is a temporary folder of secret files for tests of a vendor's New.
type Files struct {
	t   testing.TB
	Dir string
}

// NewFiles makes an empty folder, removed when t ends.
func NewFiles(t testing.TB) *Files {
	return &Files{t: t, Dir: t.TempDir()}
}

// Write writes content to the file name (mode 0600) and returns its path.
func (f *Files) Write(name, content string) string {
	f.t.Helper()
	p := f.Path(name)
	require.NoError(f.t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// Path is where the file name is or would be.
func (f *Files) Path(name string) string {
	return filepath.Join(f.Dir, name)
}

// OpenChecks are the checks notify.Open makes, in every vendor's New,
// before the vendor's own check of its secret.
type OpenChecks struct {
	// Vendor and Name start the errors: `vendor "name": ...`.
	Vendor, Name string
	// Key is the secret file's settings key, e.g. "routing_key_file".
	Key string
	// New calls the vendor's New with the secret at file (a valid
	// configuration otherwise) and logger.
	New func(file string, logger *slog.Logger) error
}

// NewOf is an OpenChecks.New that calls newFn (a vendor's New) with the
// configuration cfg makes for the secret at file, and no HTTP client.
func NewOf[C, N any](newFn func(C, *http.Client, *slog.Logger) (N, error), cfg func(file string) C) func(file string, logger *slog.Logger) error {
	return func(file string, logger *slog.Logger) error {
		_, err := newFn(cfg(file), nil, logger)
		return err
	}
}

// Require checks that New wants a logger, the secret file's key, a file
// that exists and one that is not empty; secret is a valid secret, which
// it writes (with a newline) to the file good, for the test's own checks.
func (c OpenChecks) Require(t *testing.T, files *Files, secret string) (good string) {
	t.Helper()
	good = files.Write("good", secret+"\n")
	logger := slog.New(slog.DiscardHandler)
	require.EqualError(t, c.New(good, nil), c.Vendor+": logger is required")
	require.EqualError(t, c.New("", logger), c.Vendor+` "`+c.Name+`": `+c.Key+`: required`)
	require.ErrorIs(t, c.New(files.Path("missing"), logger), os.ErrNotExist)
	empty := files.Write("empty", " \n")
	require.EqualError(t, c.New(empty, logger), c.Vendor+` "`+c.Name+`": `+c.Key+` "`+empty+`" is empty`)
	return good
}

// ValidateCase is one row of a Config.Validate table: Edit changes a
// valid configuration, Want is the whole error ("" for none).
type ValidateCase[C any] struct {
	Name string
	Edit func(*C)
	Want string
}

// RequireValidate checks that valid validates, then runs each case as a
// subtest: validate of valid after Edit gives Want, and no error quotes a
// value holding "CANARY".
func RequireValidate[C any](t *testing.T, valid C, validate func(C) error, cases []ValidateCase[C]) {
	t.Helper()
	require.NoError(t, validate(valid), "the valid configuration")
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			c := valid
			tc.Edit(&c)
			err := validate(c)
			if tc.Want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.Want)
			require.NotContains(t, err.Error(), "CANARY")
		})
	}
}

// ConformanceOf runs Conformance on a fresh server from newServer for
// each check and the notifier newNotifier makes for it (nil logger).
func ConformanceOf[S ServerControl, N notify.Notifier](t *testing.T, newServer func(testing.TB) S, newNotifier func(*testing.T, S, *slog.Logger) N) {
	t.Helper()
	Conformance(t, func(t *testing.T) (notify.Notifier, ServerControl) {
		srv := newServer(t)
		return newNotifier(t, srv, nil), srv
	})
}

// StartLogged is Start with a notifier that logs to a CaptureLogger,
// whose text logs returns.
func StartLogged[S any, N notify.Notifier](t *testing.T, newServer func(testing.TB) S, newNotifier func(*testing.T, S, *slog.Logger) N) (srv S, n N, logs func() string) {
	t.Helper()
	logger, logs := CaptureLogger()
	srv = newServer(t)
	return srv, newNotifier(t, srv, logger), logs
}

// RequireUnknownEventOf is RequireUnknownEvent on a fresh server from
// newServer and its notifier (Start): nothing reaches the server.
func RequireUnknownEventOf[S RecordingServer, N notify.Notifier](t *testing.T, newServer func(testing.TB) S, newNotifier func(*testing.T, S, *slog.Logger) N, state []byte, want string) {
	t.Helper()
	srv, n := Start(t, newServer, newNotifier)
	RequireUnknownEvent(t, n, state, func() int { return len(srv.Requests()) }, want)
}

// OrDiscard is logger, or a logger that discards when it is nil.
func OrDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}

// RequireUnknownEvent sends n an open message relabelled "snooze": Notify
// refuses it with the error want, permanently, returns state unchanged
// and sends nothing (sent counts what the server has received).
func RequireUnknownEvent(t *testing.T, n notify.Notifier, state []byte, sent func() int, want string) {
	t.Helper()
	m := SampleMessage(notify.EventOpen)
	m.Event = "snooze"
	got, err := NotifyStateless(t, n, m, state)
	require.EqualError(t, err, want)
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry)
	require.Equal(t, string(state), string(got), "the state stands")
	require.Zero(t, sent())
}

// MustNew is a vendor's New(cfg, hc, logger) for tests: a nil logger
// discards, and an error fails t.
func MustNew[C, N any](t testing.TB, newFn func(C, *http.Client, *slog.Logger) (N, error), cfg C, hc *http.Client, logger *slog.Logger) N {
	t.Helper()
	n, err := newFn(cfg, hc, OrDiscard(logger))
	require.NoError(t, err)
	return n
}
