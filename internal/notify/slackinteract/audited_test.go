package slackinteract

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/notify/slack/slackcfg"
	"github.com/driftwatch/driftwatch/internal/store"
)

// entries is a Recorder that keeps what it is given.
type entries struct {
	mu  sync.Mutex
	got []store.AuditEntry
}

func (e *entries) RecordAudit(_ context.Context, x store.AuditEntry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, x)
	return nil
}

// NewAudited reads the notifiers from the current specs at each request
// (a rotated secret applies at once) and records decisions and refusals
// through the recorder, refusals with the peer it is given.
func TestNewAudited(t *testing.T) {
	files := notifytest.NewFiles(t)
	recv := notifytest.NewSlackResponseServer(t)
	old, rotated := notifytest.Canary("old"), notifytest.Canary("rotated")
	secret := files.Write("signing", old)
	specs := func() []notifycfg.Spec {
		return []notifycfg.Spec{{Name: "slack-oncall", Settings: &slackcfg.Config{Channel: channel, SigningSecretFile: secret,
			Approvers: []string{approver}, APIURL: recv.URL + "/api/"}}}
	}
	rec := &entries{}
	dec := &decider{}
	logger, _ := notifytest.CaptureLogger()
	h, err := NewAudited(Options{Decider: dec, WithActor: withActor, HashMismatchErr: errMismatch, Logger: logger,
		Now: func() time.Time { return now }}, specs, rec, func(string) string { return "peer-1" })
	require.NoError(t, err)
	serve := func(secret, ts string) int {
		p := notifytest.SlackActionPayload{UserID: approver, UserName: "alice", Channel: channel, MessageTS: ts,
			ActionID: slack.ActionApprove, ResponseURL: recv.ResponseURL("B0123"),
			Value: slack.ActionValue{Notifier: "slack-oncall", Remediation: "rem-1", Hash: "h"}.String()}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, notifytest.SlackSigner{Secret: secret}.Request(target, p.Body(), now))
		return w.Code
	}

	require.Equal(t, http.StatusOK, serve(old, "1793700000.000100"))
	require.Len(t, dec.Calls(), 1, "decided")
	require.Len(t, rec.got, 1)
	require.Equal(t, store.AuditSourceSlack, rec.got[0].Source)
	require.False(t, rec.got[0].Anonymous, "a decision names its Slack user")

	files.Write("signing", rotated)
	require.Equal(t, http.StatusUnauthorized, serve(old, "1793700000.000200"), "the rotated secret applies at once")
	require.Len(t, rec.got, 2)
	require.True(t, rec.got[1].Anonymous)
	require.Equal(t, "peer-1", rec.got[1].Peer)
	require.Equal(t, http.StatusOK, serve(rotated, "1793700000.000300"))
	require.Len(t, dec.Calls(), 2)
}
