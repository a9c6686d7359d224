package webhook

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/webhook/webhookcfg"
)

// DefaultTimeout bounds one delivery attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one webhook notifier (webhookcfg.Config: the
// notifiers[].webhook block, its keys and its check).
type Config = webhookcfg.Config
