package notifiers

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/gitlab"
)

// buildGitLab constructs a notifier of type gitlab from n.GitLab.
func buildGitLab(n config.Notifier, timeout time.Duration, hc *http.Client, log *slog.Logger) (notify.Notifier, error) {
	g := n.GitLab
	if g == nil {
		return nil, errors.New("type gitlab without a gitlab block")
	}
	return gitlab.New(gitlab.Config{Name: n.Name, TokenFile: g.TokenFile, Project: g.Project, APIURL: g.APIURL,
		Labels: g.Labels, Timeout: timeout}, hc, log)
}
