package notifiers

import (
	"errors"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// buildEmail constructs a notifier of type email from n.Email (SMTP: no
// HTTP client).
func buildEmail(n config.Notifier, timeout time.Duration, log *slog.Logger) (notify.Notifier, error) {
	return nil, errors.New("type email is not built yet")
}
