package teamscfg

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Validate reports a missing name and file and a negative timeout, each
// at its key.
func TestValidate(t *testing.T) {
	require.NoError(t, Config{Name: "t", WebhookURLFile: "/u"}.Validate())
	require.EqualError(t, Config{Timeout: -time.Second}.Validate(),
		"name: required\nwebhook_url_file: required\ntimeout: -1s: must not be negative")
}
