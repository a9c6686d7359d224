package notifytest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func whSign(secret, ts, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestWebhookServer(t *testing.T) {
	s := NewWebhookServer(t, "whsec-0123456789abcdef")
	body := `{"version":1,"id":"m1","event":"open","incident":{"key":"k","workspace":"w","class":"drift","severity":"high","owner":"","team":"","labels":{},"since":"2026-11-03T09:00:00Z","counts":{"drift":1,"pending":0,"forbidden":0,"noise":0, "hygiene": 0},"findings":[],"error":"","run_id":"r","url":""},"delta":null,"at":"2026-11-03T10:00:00Z"}`
	post := func(path, ts, sig, id, b string) int {
		req, err := http.NewRequestWithContext(t.Context(), "POST", strings.TrimSuffix(s.URL, s.path)+path, strings.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("X-Driftwatch-Timestamp", ts)
		req.Header.Set("X-Driftwatch-Signature", sig)
		req.Header.Set("X-Driftwatch-Delivery", id)
		resp, err := s.HTTPClient().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)

	require.Equal(t, 200, post(s.path, now, whSign(s.Secret, now, body), "m1", body))
	require.Equal(t, 200, post(s.path, now, whSign(s.Secret, now, body), "m1", body))
	require.Equal(t, 401, post(s.path, now, whSign("other-secret-0000", now, body), "m2", body))
	require.Equal(t, 401, post(s.path, old, whSign(s.Secret, old, body), "m3", body))
	require.Equal(t, 401, post(s.path, now, whSign(s.Secret, now, body+" "), "m4", body))
	unknown := strings.Replace(body, `"version":1`, `"version":1,"extra":true`, 1)
	require.Equal(t, 400, post(s.path, now, whSign(s.Secret, now, unknown), "m5", unknown))
	require.Equal(t, 404, post("/hooks/guess", now, whSign(s.Secret, now, body), "m6", body))

	ds := s.Deliveries()
	require.Len(t, ds, 6)
	require.True(t, ds[0].Verified)
	require.Equal(t, "k", ds[0].Payload.Incident.Key)
	require.False(t, ds[0].Duplicate)
	require.True(t, ds[1].Duplicate)
	require.Equal(t, "signature mismatch", ds[2].Reason)
	require.Equal(t, "stale timestamp", ds[3].Reason)
	require.Equal(t, "signature mismatch", ds[4].Reason)
	require.Contains(t, ds[5].Reason, "unknown field")
	require.Equal(t, 7, s.Attempts())
	require.Contains(t, s.Secrets(), s.URL)
}
