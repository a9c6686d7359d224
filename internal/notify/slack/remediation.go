package slack

import (
	"fmt"
	"strings"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// maxReasonRunes caps a remediation's reason in a message.
const maxReasonRunes = 500

// remediationTitle names what happened to a remediation, for text and
// headers: "Remediation applied".
func remediationTitle(r *notify.Remediation) string {
	return r.Result.Title(func(s string) string { return notify.Truncate(notify.OneLine(s), 40) })
}

func remediationEmoji(r *notify.Remediation) string {
	switch r.Result {
	case notify.RemediationAwaitingApproval:
		return ":hourglass_flowing_sand:"
	case notify.RemediationApproved:
		return ":gear:"
	case notify.RemediationApplied:
		return ":white_check_mark:"
	case notify.RemediationFailed, notify.RemediationVerificationFailed:
		return ":x:"
	}
	return ":no_entry:"
}

// remediationText is the one-line plain text of a remediation message:
// "Remediation failed: apply: Error: Cannot write file (severity raised to
// high)".
func remediationText(m notify.Message) string {
	r := m.Remediation
	s := remediationTitle(r)
	if r.Reason != "" {
		s += ": " + notify.OneLine(r.Reason)
	}
	if r.Result.Failed() {
		s += " (severity raised to " + string(m.Incident.Severity) + ")"
	}
	return s
}

// remediationSection is the mrkdwn body of a remediation message: what
// happened, how many resources, the reason, the approval command, the
// severity raise, and a link to the apply run.
func remediationSection(m notify.Message) string {
	r := m.Remediation
	var b strings.Builder
	b.WriteString(remediationEmoji(r) + " *" + esc(remediationTitle(r)) + "*")
	if r.ID != "" {
		b.WriteString(" · remediation " + codeSpan(r.ID, 100))
	}
	if r.Mode != "" {
		b.WriteString(" (" + esc(notify.Truncate(notify.OneLine(r.Mode), 20)) + ")")
	}
	switch r.Result {
	case notify.RemediationAwaitingApproval:
		fmt.Fprintf(&b, "\nReverts %s. Approve with %s", resources(r.Resources), codeSpan("driftwatch approve "+r.ID, 150))
		if !r.ExpiresAt.IsZero() {
			b.WriteString(" before " + slackDate(r.ExpiresAt))
		}
		b.WriteString(".")
	case notify.RemediationApproved:
		fmt.Fprintf(&b, "\nReverting %s now.", resources(r.Resources))
	case notify.RemediationApplied:
		fmt.Fprintf(&b, "\nReverted %s; a verification run follows.", resources(r.Resources))
	}
	if r.Reason != "" {
		b.WriteString("\n*Reason:* " + esc(notify.Truncate(notify.OneLine(r.Reason), maxReasonRunes)))
	}
	if r.Result.Failed() {
		b.WriteString("\n:arrow_up: Severity raised to " + severityEmoji(m.Incident.Severity) + " *" + esc(string(m.Incident.Severity)) + "*.")
	}
	if u := linkURL(r.URL); u != "" {
		b.WriteString("\n<" + u + "|Open the apply run>")
	}
	return b.String()
}

func resources(n int) string {
	if n == 1 {
		return "1 resource"
	}
	return fmt.Sprintf("%d resources", n)
}
