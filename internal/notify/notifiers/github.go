package notifiers

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/github"
)

// buildGitHub constructs a notifier of type github from n.GitHub.
func buildGitHub(n config.Notifier, timeout time.Duration, hc *http.Client, log *slog.Logger) (notify.Notifier, error) {
	g := n.GitHub
	if g == nil {
		return nil, errors.New("type github without a github block")
	}
	return github.New(github.Config{Name: n.Name, TokenFile: g.TokenFile, Repository: g.Repository, APIURL: g.APIURL,
		Labels: g.Labels, Timeout: timeout}, hc, log)
}
