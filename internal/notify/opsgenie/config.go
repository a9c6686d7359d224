package opsgenie

import (
	"time"

	"github.com/opsgenie/opsgenie-go-sdk-v2/client"

	"github.com/driftwatch/driftwatch/internal/notify/opsgenie/opsgeniecfg"
)

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one OpsGenie notifier (opsgeniecfg.Config: the
// notifiers[].opsgenie block, its keys and its check).
type Config = opsgeniecfg.Config

// Responder is an OpsGenie responder by name (opsgeniecfg.Responder).
type Responder = opsgeniecfg.Responder

// apiURL is the SDK's host setting for c, checked by Validate.
func apiURL(c Config) client.ApiUrl {
	switch {
	case c.APIURL != "":
		h, _ := opsgeniecfg.APIHost(c.APIURL)
		return client.ApiUrl(h)
	case c.Region == "eu":
		return client.API_URL_EU
	}
	return client.API_URL
}
