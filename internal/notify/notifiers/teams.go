package notifiers

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/teams"
)

// buildTeams constructs a notifier of type teams from n.Teams.
func buildTeams(n config.Notifier, timeout time.Duration, hc *http.Client, log *slog.Logger) (notify.Notifier, error) {
	t := n.Teams
	if t == nil {
		return nil, errors.New("type teams without a teams block")
	}
	return teams.New(teams.Config{Name: n.Name, WebhookURLFile: t.WebhookURLFile, Timeout: timeout}, hc, log)
}
