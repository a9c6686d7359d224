package notifiers

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/jsm"
)

// buildJSM constructs a notifier of type jsm from n.JSM.
func buildJSM(n config.Notifier, timeout time.Duration, hc *http.Client, log *slog.Logger) (notify.Notifier, error) {
	j := n.JSM
	if j == nil {
		return nil, errors.New("type jsm without a jsm block")
	}
	nt, err := jsm.New(jsm.Config{Name: n.Name, APIKeyFile: j.APIKeyFile, APIURL: j.APIURL, Timeout: timeout}, hc, log)
	if err != nil {
		// Not nt: a nil *jsm.Notifier in a non-nil interface.
		return nil, err
	}
	return nt, nil
}
