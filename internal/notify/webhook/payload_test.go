package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func TestBuildPayload(t *testing.T) {
	t.Run("update", func(t *testing.T) {
		got, err := buildPayload(notifytest.SampleMessage(notify.EventUpdate))
		require.NoError(t, err)
		require.JSONEq(t, `{
			"version": 1,
			"id": "msg-update-0001",
			"event": "update",
			"incident": {
				"key": "drift-prod-network-3f9a2c",
				"workspace": "prod/network",
				"class": "drift",
				"severity": "high",
				"owner": "network-team",
				"team": "platform",
				"labels": {"env": "prod", "tier": "core"},
				"since": "2026-11-03T09:00:00Z",
				"counts": {"drift": 1, "pending": 1, "forbidden": 0, "noise": 0, "hygiene": 0},
				"findings": [
					{"kind": "drift", "address": "aws_security_group.web", "type": "aws_security_group", "action": "update", "attributes": ["ingress", "tags.Name"]},
					{"kind": "pending", "address": "aws_s3_bucket.logs", "type": "aws_s3_bucket", "action": "create", "attributes": []}
				],
				"error": "",
				"run_id": "run-0042",
				"url": "https://driftwatch.example.com/workspaces/prod%2Fnetwork"
			},
			"delta": {
				"added": [{"kind": "pending", "address": "aws_s3_bucket.logs", "type": "aws_s3_bucket", "action": "create", "attributes": []}],
				"removed": [],
				"changed": []
			},
			"at": "2026-11-03T10:00:00Z"
		}`, string(got))
	})

	t.Run("group", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Group = &notify.Group{ID: "g-0123456789abcdef", Cause: "shape", Title: "aws_security_group: ingress changed on 2 resources in 2 workspaces",
			Workspaces: []string{"a", "b"}}
		got, err := buildPayload(m)
		require.NoError(t, err)
		var p struct {
			Incident struct {
				Group json.RawMessage `json:"group"`
			} `json:"incident"`
		}
		require.NoError(t, json.Unmarshal(got, &p))
		require.JSONEq(t, `{"id": "g-0123456789abcdef", "cause": "shape", "title": "aws_security_group: ingress changed on 2 resources in 2 workspaces",
			"workspaces": ["a", "b"]}`, string(p.Incident.Group))
	})

	t.Run("errored without findings", func(t *testing.T) {
		m := notify.Message{ID: "m2", Event: notify.EventOpen, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
			Incident: notify.Incident{Key: "errored-x", Workspace: "x", Class: notify.ClassErrored, Severity: notify.SeverityLow, Error: "init failed"}}
		got, err := buildPayload(m)
		require.NoError(t, err)
		require.JSONEq(t, `{"version":1,"id":"m2","event":"open","incident":{"key":"errored-x","workspace":"x","class":"errored","severity":"low",
			"owner":"","team":"","labels":{},"since":"0001-01-01T00:00:00Z","counts":{"drift":0,"pending":0,"forbidden":0,"noise":0, "hygiene": 0},
			"findings":[],"error":"init failed","run_id":"","url":""},"delta":null,"at":"2026-01-02T02:04:05Z"}`, string(got))
	})

	t.Run("findings are bounded", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Findings = nil
		for i := range 1500 {
			m.Incident.Findings = append(m.Incident.Findings, drift.Finding{Kind: drift.KindDrift, Address: fmt.Sprintf("a.b[%d]", i), Action: "update"})
		}
		got, err := buildPayload(m)
		require.NoError(t, err)
		var p struct {
			Incident struct {
				Findings  []drift.Finding `json:"findings"`
				Truncated bool            `json:"findings_truncated"`
			} `json:"incident"`
		}
		require.NoError(t, json.Unmarshal(got, &p))
		require.Len(t, p.Incident.Findings, maxFindings)
		require.True(t, p.Incident.Truncated)
	})
}

func TestSign(t *testing.T) {
	// Computed independently (Python hmac) so the test pins the scheme.
	require.Equal(t, "sha256=b5d077445fefce4eddf5b0b9cb084819a3b04a9a1c735e1285756e41a5e784eb",
		sign([]byte("whsec-0123456789abcdef"), "1700000000", []byte(`{"version":1}`)))
}

func TestBuildHeaders(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventResolve)
	secret := []byte("whsec-0123456789abcdef")
	body := []byte(`{"version":1}`)
	got := buildHeaders(m, secret, body, time.Unix(1700000000, 0), map[string]string{"authorization": "Bearer gw-token", "X-Team": "net"})
	require.Equal(t, http.Header{
		"Authorization":          {"Bearer gw-token"},
		"X-Team":                 {"net"},
		"Content-Type":           {"application/json"},
		"User-Agent":             {"driftwatch-webhook/1"},
		"X-Driftwatch-Event":     {"resolve"},
		"X-Driftwatch-Delivery":  {"msg-resolve-0001"},
		"X-Driftwatch-Timestamp": {"1700000000"},
		"X-Driftwatch-Signature": {"sha256=b5d077445fefce4eddf5b0b9cb084819a3b04a9a1c735e1285756e41a5e784eb"},
	}, got)
}

func TestVerify(t *testing.T) {
	secret := []byte("whsec-0123456789abcdef")
	body := []byte(`{"version":1}`)
	now := time.Unix(1700000000, 0)
	signed := func() http.Header {
		return buildHeaders(notifytest.SampleMessage(notify.EventOpen), secret, body, now, nil)
	}
	for _, tc := range []struct {
		name   string
		edit   func(h http.Header) ([]byte, []byte, time.Time)
		errMsg string
	}{
		{name: "valid", edit: func(http.Header) ([]byte, []byte, time.Time) { return secret, body, now.Add(4 * time.Minute) }},
		{name: "wrong secret", edit: func(http.Header) ([]byte, []byte, time.Time) { return []byte("other-secret-000000"), body, now }, errMsg: "signature mismatch"},
		{name: "tampered body", edit: func(http.Header) ([]byte, []byte, time.Time) { return secret, []byte(`{"version":2}`), now }, errMsg: "signature mismatch"},
		{name: "stale", edit: func(http.Header) ([]byte, []byte, time.Time) { return secret, body, now.Add(6 * time.Minute) }, errMsg: "timestamp 1700000000 is 6m0s from now, more than 5m0s"},
		{name: "future", edit: func(http.Header) ([]byte, []byte, time.Time) { return secret, body, now.Add(-6 * time.Minute) }, errMsg: "timestamp 1700000000 is -6m0s from now, more than 5m0s"},
		{name: "timestamp replaced", edit: func(h http.Header) ([]byte, []byte, time.Time) {
			h.Set(HeaderTimestamp, "1700000100")
			return secret, body, now
		}, errMsg: "signature mismatch"},
		{name: "no signature", edit: func(h http.Header) ([]byte, []byte, time.Time) {
			h.Del(HeaderSignature)
			return secret, body, now
		}, errMsg: "missing or malformed X-Driftwatch-Signature"},
		{name: "no timestamp", edit: func(h http.Header) ([]byte, []byte, time.Time) {
			h.Del(HeaderTimestamp)
			return secret, body, now
		}, errMsg: "missing or malformed X-Driftwatch-Timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := signed()
			sec, b, at := tc.edit(h)
			err := Verify(sec, h, b, at, DefaultTolerance)
			if tc.errMsg == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.errMsg)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	valid := Config{Name: "hook", URLFile: "/s/url", SecretFile: "/s/key"}
	notifytest.RequireValidate(t, valid, Config.Validate, []notifytest.ValidateCase[Config]{
		{Name: "headers", Edit: func(c *Config) { c.Headers = map[string]string{"Authorization": "Bearer x", "X-Team": "net"} }},
		{Name: "empty", Edit: func(c *Config) { *c = Config{} }, Want: "name: required\nurl_file: required\nsecret_file: required"},
		{Name: "timeout", Edit: func(c *Config) { c.Timeout = -1 }, Want: "timeout: -1ns: must not be negative"},
		{Name: "reserved", Edit: func(c *Config) {
			c.Headers = map[string]string{"content-type": "text/plain", "X-Driftwatch-Signature": "x", "bad name": "v", "X-Ok": "a\r\nb"}
		}, Want: "headers: \"X-Driftwatch-Signature\" is set by driftwatch\n" +
			"headers: the value of \"X-Ok\" contains a line break or NUL\n" +
			"headers: \"bad name\" is not a valid header name\n" +
			"headers: \"content-type\" is set by driftwatch"},
	})
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	b, err := buildPayload(m)
	require.NoError(t, err)
	var p struct {
		Incident struct {
			Findings []map[string]any `json:"findings"`
		} `json:"incident"`
	}
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "carol@example.com", p.Incident.Findings[0]["attribution"].(map[string]any)["actor"])
	require.Equal(t, "Ann", p.Incident.Findings[1]["commit"].(map[string]any)["author"])
	require.Contains(t, p.Incident.Findings[0], "window")
}
