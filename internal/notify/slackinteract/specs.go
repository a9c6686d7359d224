package slackinteract

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/slack/slackcfg"
)

// FromSpecs is the Notifiers of the notifiers' settings blocks: the slack
// ones with a signing_secret_file, their secrets read now (call it at each
// request, so that a reload or a rotated secret applies at once). An
// unreadable secret file is an error naming the notifier and the path,
// never the content.
func FromSpecs(specs []notifycfg.Spec) ([]Notifier, error) {
	var out []Notifier
	for _, sp := range specs {
		s, ok := sp.Settings.(*slackcfg.Config)
		if !ok || s == nil || s.SigningSecretFile == "" {
			continue
		}
		b, err := os.ReadFile(s.SigningSecretFile)
		if err != nil {
			return nil, fmt.Errorf("notifier %q: signing_secret_file: %w", sp.Name, err) // the path, not the content
		}
		in := Notifier{Name: sp.Name, SigningSecret: strings.TrimSpace(string(b)), Approvers: s.Approvers, Channel: s.Channel}
		if u, err := url.Parse(s.APIURL); err == nil && s.APIURL != "" {
			in.ResponseOrigin = u.Scheme + "://" + u.Host // Slack redirected (tests, proxies): its response_urls too
		}
		out = append(out, in)
	}
	return out, nil
}
