package webhook

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// minSecret is the shortest signing key accepted, in bytes.
const minSecret = 16

// Notifier posts signed JSON to one endpoint. It implements
// notify.Notifier.
type Notifier struct {
	name    string
	url     string
	secret  []byte
	headers map[string]string
	// redactions are the secret strings to remove from error texts,
	// longest first.
	redactions []string
	// sender posts; its Now is also the clock for signature timestamps (a
	// test seam).
	sender notify.Sender
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the URL and secret files. It does no
// network I/O. hc (nil: a default client) is what requests go through (a
// proxy, a private CA, a test server); it is copied, and redirects are
// never followed, whatever hc says.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	if _, err := notify.Open("webhook", cfg.Name, logger, cfg.Validate, notify.Secret{}); err != nil {
		return nil, err
	}
	rawURL, err := readSecret(cfg.URLFile)
	if err != nil {
		return nil, fmt.Errorf("webhook %q: url_file: %w", cfg.Name, err)
	}
	// url.Parse errors quote the URL: say what is wrong without it.
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("webhook %q: url_file %q: want an absolute http(s) URL without a fragment", cfg.Name, cfg.URLFile)
	}
	secret, err := readSecret(cfg.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("webhook %q: secret_file: %w", cfg.Name, err)
	}
	if len(secret) < minSecret {
		return nil, fmt.Errorf("webhook %q: secret_file %q: the key must be at least %d bytes", cfg.Name, cfg.SecretFile, minSecret)
	}
	n := &Notifier{name: cfg.Name, url: rawURL, secret: []byte(secret), headers: cfg.Headers, redactions: redactions(u, secret, cfg.Headers)}
	n.sender = notify.NewSender("webhook", cfg.Name, hc, cmp.Or(cfg.Timeout, DefaultTimeout), n.redact)
	if u.Scheme == "http" && !notifycfg.Loopback(u.Hostname()) {
		logger.Warn("webhook url uses plain http: payload and signature travel unencrypted", "notifier", cfg.Name)
	}
	return n, nil
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err // a *PathError: names the file, not its content
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%q is empty", path)
	}
	return s, nil
}

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// Notify implements notify.Notifier. Webhooks keep no per-incident state:
// state is returned unchanged.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	body, err := buildPayload(m)
	if err != nil {
		return state, fmt.Errorf("webhook %s: %w", n.name, err)
	}
	// One attempt (notify.Sender); the answer's body is never quoted.
	h := buildHeaders(m, n.secret, body, n.sender.Now(), n.headers)
	_, _, err = n.sender.Send(ctx, notify.Request{Op: "deliver " + m.ID, URL: n.url, Header: h, Body: body})
	return state, err
}

// redactions lists what must never be shown: the URL and its parts that
// can carry a token, the secret, and the header values.
func redactions(u *url.URL, secret string, headers map[string]string) []string {
	r := []string{u.String(), secret}
	if p := u.EscapedPath(); len(p) > 1 {
		r = append(r, p, u.Path)
	}
	if u.RawQuery != "" {
		r = append(r, u.RawQuery)
	}
	if pw, ok := u.User.Password(); ok {
		r = append(r, pw)
	}
	if u.User != nil {
		r = append(r, u.User.String())
	}
	for _, v := range headers {
		if len(v) >= 4 {
			r = append(r, v)
		}
	}
	r = slices.DeleteFunc(r, func(s string) bool { return s == "" || s == "/" })
	slices.SortFunc(r, func(a, b string) int { return len(b) - len(a) })
	return r
}

func (n *Notifier) redact(s string) string { return notify.Redact(s, n.redactions...) }
