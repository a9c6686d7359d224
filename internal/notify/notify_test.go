package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		" 7 ":                           7 * time.Second,
		"7":                             7 * time.Second,
		"0":                             0,
		"-3":                            0,
		"soon":                          0,
		"Tue, 03 Nov 2026 09:01:30 GMT": 90 * time.Second,
		"Tue, 03 Nov 2026 08:00:00 GMT": 0,
	} {
		require.Equal(t, want, ParseRetryAfter(v, now), "%q", v)
	}
}

// Title names every known result, and shows another through clean.
func TestRemediationTitle(t *testing.T) {
	upper := strings.ToUpper
	for r, want := range map[RemediationResult]string{
		RemediationAwaitingApproval:   "Remediation awaiting approval",
		RemediationApproved:           "Remediation approved",
		RemediationApplied:            "Remediation applied",
		RemediationFailed:             "Remediation failed",
		RemediationVerificationFailed: "Remediation verification failed",
		RemediationRefused:            "Remediation refused",
		"rolled_back":                 "Remediation ROLLED_BACK",
	} {
		require.Equal(t, want, r.Title(upper))
	}
}

// Check refuses an unknown event and a remediation event without its
// remediation.
func TestMessageCheck(t *testing.T) {
	for _, e := range []Event{EventOpen, EventUpdate, EventRenotify, EventResolve} {
		require.NoError(t, Message{Event: e}.Check())
	}
	require.NoError(t, Message{Event: EventRemediation, Remediation: &Remediation{}}.Check())
	require.EqualError(t, Message{ID: "m1", Event: EventRemediation}.Check(), "message m1: remediation event without its remediation")
	require.EqualError(t, Message{Event: "escalate"}.Check(), `unknown event "escalate"`)
}

func TestKeptState(t *testing.T) {
	state := []byte(`{"k":1}`)
	for _, ev := range []Event{EventOpen, EventUpdate, EventRemediation, EventRenotify} {
		require.Equal(t, state, KeptState(Message{Event: ev}, state), ev)
	}
	require.Nil(t, KeptState(Message{Event: EventResolve}, state))
}
