package notifiers

import (
	"errors"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/email"
)

// buildEmail constructs a notifier of type email from n.Email (SMTP: no
// HTTP client; n.CAFile adds roots for the server's certificate, the
// timeout bounds one delivery).
func buildEmail(n config.Notifier, timeout time.Duration, log *slog.Logger) (notify.Notifier, error) {
	e := n.Email
	if e == nil {
		return nil, errors.New("type email without an email block")
	}
	return email.New(email.Config{
		Name: n.Name, Host: e.Host, Port: e.Port, From: e.From, To: e.To,
		UsernameFile: e.UsernameFile, PasswordFile: e.PasswordFile, TLS: e.TLS,
		SubjectPrefix: e.SubjectPrefix, CAFile: n.CAFile, Timeout: timeout,
	}, log)
}
