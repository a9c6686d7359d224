package genie_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/genie"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func TestCloseNote(t *testing.T) {
	for class, want := range map[notify.Class]string{
		notify.ClassDrift:     "Resolved: prod/network matches its Terraform configuration again (run run-0042).",
		notify.ClassForbidden: "Resolved: no forbidden resource types left in prod/network (run run-0042).",
		notify.ClassErrored:   "Resolved: drift checks of prod/network succeed again (run run-0042).",
	} {
		in := notifytest.SampleMessage(notify.EventResolve).Incident
		in.Class = class
		require.Equal(t, want, genie.CloseNote(in))
	}
}

// The caller's line about the raised priority stands after the reason
// and before the run, and only in the note of a failed remediation.
func TestRemediationNoteRaisedLine(t *testing.T) {
	const raised = "the vendor's line"
	m := notifytest.SampleMessage(notify.EventRemediation)
	for result, want := range map[notify.RemediationResult]string{
		notify.RemediationFailed: "Remediation failed (remediation rem-0007, run run-0043).\n" +
			"Reason: apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)\n" +
			"the vendor's line\n" +
			"Run: https://driftwatch.example.com/runs/run-0043",
		notify.RemediationVerificationFailed: "Remediation verification failed (remediation rem-0007, run run-0043).\n" +
			"Reason: apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)\n" +
			"the vendor's line\n" +
			"Run: https://driftwatch.example.com/runs/run-0043",
		notify.RemediationApplied: "Remediation applied: reverted 1 resource; a verification run follows (remediation rem-0007, run run-0043).\n" +
			"Reason: apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)\n" +
			"Run: https://driftwatch.example.com/runs/run-0043",
	} {
		t.Run(string(result), func(t *testing.T) {
			mm := m
			r := *m.Remediation
			r.Result = result
			mm.Remediation = &r
			require.Equal(t, want, genie.RemediationNote(mm, raised))
		})
	}
}

func TestValidAlias(t *testing.T) {
	for key, want := range map[string]bool{
		"drift-prod-network-3f9a": true,
		"a_b.C9":                  true,
		"":                        false,
		"drift/prod":              false,
		"a b":                     false,
		"a?b":                     false,
		"a%2Fb":                   false,
		".":                       false,
		"..":                      false,
		strings.Repeat("a", 512):  true,
		strings.Repeat("a", 513):  false,
	} {
		require.Equal(t, want, genie.ValidAlias(key), "%q", key)
	}
}
