package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/slackinteract"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// A Slack decision becomes an audit entry of source slack, under the
// Slack user, with the notifier named; it is read back from the store's
// log like the API's entries.
func TestSlackAudit(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	rec := server.AuditFor(st, server.AuditLimits{Logger: slog.New(slog.DiscardHandler)})
	require.NotNil(t, rec, "the sqlite store keeps an audit log")
	at := time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC)
	note := slackinteract.DecisionAudit(rec, slog.New(slog.DiscardHandler))
	note(t.Context(), slackinteract.Decision{At: at, Actor: "slack:U0123ABCD (alice)", Action: "approve",
		Remediation: "rem-net", Notifier: "slack-oncall", Result: store.AuditOK})
	note(t.Context(), slackinteract.Decision{At: at.Add(time.Second), Actor: "slack:U0STRANGER (mallory)", Action: "reject",
		Remediation: "rem-net", Notifier: "slack-oncall", Result: store.AuditDenied, Detail: "not an approver of this notifier"})

	got, err := st.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i := range got {
		got[i].ID = 0
		got[i].At = got[i].At.UTC()
	}
	require.Equal(t, []store.AuditEntry{
		{At: at.Add(time.Second), Actor: "slack:U0STRANGER (mallory)", Method: "slack", Roles: []string{}, Action: "remediation.reject",
			Target: "rem-net", Result: store.AuditDenied, Detail: "not an approver of this notifier; notifier slack-oncall", Source: "slack", Count: 1},
		{At: at, Actor: "slack:U0123ABCD (alice)", Method: "slack", Roles: []string{}, Action: "remediation.approve",
			Target: "rem-net", Result: store.AuditOK, Detail: "notifier slack-oncall", Source: "slack", Count: 1},
	}, got)
}

// Without an audit log nothing is wired: the server records nothing and
// Slack's handler is told nothing.
func TestNoAuditLog(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	rec := server.AuditFor(struct{ store.Store }{st}, server.AuditLimits{Logger: slog.New(slog.DiscardHandler)})
	require.Nil(t, rec)
	require.Nil(t, slackinteract.DecisionAudit(rec, slog.New(slog.DiscardHandler)))
	require.Nil(t, slackinteract.RefusalAudit(rec, server.AuditPeer, slog.New(slog.DiscardHandler)))
	require.Nil(t, store.ReplayOf(struct{ store.Store }{st}))
	require.NotNil(t, store.ReplayOf(st), "the sqlite store remembers signatures")
}

// Slack requests refused before they were authenticated become
// anonymous entries of source slack, with the peer and the reason and
// nothing the request claimed, aggregated per peer and minute and rate
// limited with the server's.
func TestSlackRefusalAudit(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	rec := server.AuditFor(st, server.AuditLimits{Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()})
	at := time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC)
	note := slackinteract.RefusalAudit(rec, server.AuditPeer, slog.New(slog.DiscardHandler))
	for i := range 3 {
		note(t.Context(), slackinteract.Refusal{At: at.Add(time.Duration(i) * time.Second), RemoteAddr: "192.0.2.1:1234",
			Status: 401, Reason: "bad signature"})
	}
	got, err := st.AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	got[0].ID, got[0].At = 0, got[0].At.UTC()
	require.Equal(t, store.AuditEntry{At: at, Actor: "anonymous", Method: "anonymous", Roles: []string{}, Action: "slack.interaction",
		Result: store.AuditDenied, Status: 401, Detail: "bad signature", Source: "slack", Anonymous: true, Peer: "192.0.2.1", Count: 3}, got[0])
}

type failingRecorder struct{}

func (failingRecorder) RecordAudit(context.Context, store.AuditEntry) error {
	return errors.New("disk full")
}

// A recording that fails is logged; the decision stands.
func TestSlackAuditFailureLogged(t *testing.T) {
	var buf bytes.Buffer
	note := slackinteract.DecisionAudit(failingRecorder{}, slog.New(slog.NewTextHandler(&buf, nil)))
	note(t.Context(), slackinteract.Decision{At: time.Now(), Actor: "slack:U1", Action: "approve", Remediation: "rem-1", Result: store.AuditOK})
	require.Contains(t, buf.String(), `msg="record audit entry" action=remediation.approve target=rem-1 actor=slack:U1 result=ok err="disk full"`)
}
