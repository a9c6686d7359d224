package notifiers

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// buildGitLab constructs a notifier of type gitlab from n.GitLab.
func buildGitLab(n config.Notifier, timeout time.Duration, hc *http.Client, log *slog.Logger) (notify.Notifier, error) {
	return nil, errors.New("type gitlab is not built yet")
}
