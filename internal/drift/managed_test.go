package drift

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIdentityOf(t *testing.T) {
	require.Equal(t, map[string]string{"bucket": "logs", "n": "3", "on": "true", "tags": `["a","b"]`},
		IdentityOf([]byte(`{"bucket":"logs","n":3,"on":true,"tags":[ "a", "b" ],"gone":null}`)))
	require.Nil(t, IdentityOf([]byte(`{"gone":null}`)))
	require.Nil(t, IdentityOf([]byte(`null`)))
	require.Nil(t, IdentityOf([]byte(`["x"]`)))
	require.Nil(t, IdentityOf(nil))
	require.Equal(t, `bucket="logs", region="eu \"1\""`, IdentityString(map[string]string{"region": `eu "1"`, "bucket": "logs"}))
}
