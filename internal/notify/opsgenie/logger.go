package opsgenie

import (
	"context"
	"io"
	"log/slog"

	"github.com/sirupsen/logrus"
)

// sdkLogger is the logrus logger the SDK gets instead of its default
// (coloured lines on stderr): every entry goes to slog at debug level,
// redacted. Our own errors carry what matters; the SDK's lines are
// diagnostics.
func sdkLogger(l *slog.Logger, redact func(string) string) *logrus.Logger {
	lg := logrus.New()
	lg.SetOutput(io.Discard)
	lg.SetFormatter(nopFormatter{})
	lg.SetLevel(logrus.DebugLevel)
	lg.AddHook(&slogHook{l: l, redact: redact})
	return lg
}

type nopFormatter struct{}

func (nopFormatter) Format(*logrus.Entry) ([]byte, error) { return nil, nil }

type slogHook struct {
	l      *slog.Logger
	redact func(string) string
}

func (h *slogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *slogHook) Fire(e *logrus.Entry) error {
	if !h.l.Enabled(context.Background(), slog.LevelDebug) {
		return nil
	}
	h.l.Debug("opsgenie sdk", "sdk_level", e.Level.String(), "sdk_message", h.redact(e.Message))
	return nil
}
