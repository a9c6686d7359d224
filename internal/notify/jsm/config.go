package jsm

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/jsm/jsmcfg"
)

// DefaultURL is the base URL of Jira Service Management's integration
// API when Config.APIURL is empty: alerts are under DefaultURL+"/v2/alerts".
const DefaultURL = "https://api.atlassian.com/jsm/ops/integration"

// alertsPath is where alerts live, under the base URL.
const alertsPath = "/v2/alerts"

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one Jira Service Management notifier, an "API"
// integration of a JSM team (jsmcfg.Config: the notifiers[].jsm block,
// its keys and its check).
type Config = jsmcfg.Config
