package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Header names.
const (
	HeaderEvent     = "X-Driftwatch-Event"
	HeaderDelivery  = "X-Driftwatch-Delivery"
	HeaderTimestamp = "X-Driftwatch-Timestamp"
	HeaderSignature = "X-Driftwatch-Signature"
)

// PayloadVersion is the "version" of the JSON body; it changes only with
// an incompatible change.
const PayloadVersion = 1

// maxFindings bounds each findings list of a payload.
const maxFindings = 1000

type payload struct {
	Version  int          `json:"version"`
	ID       string       `json:"id"`
	Event    notify.Event `json:"event"`
	Incident incident     `json:"incident"`
	Delta    *delta       `json:"delta"`
	// Remediation is present on event "remediation" only.
	Remediation *remediation `json:"remediation,omitempty"`
	At          time.Time    `json:"at"`
}

type remediation struct {
	ID         string                   `json:"id"`
	Mode       string                   `json:"mode"`
	Result     notify.RemediationResult `json:"result"`
	Reason     string                   `json:"reason"`
	Resources  int                      `json:"resources"`
	ApplyRunID string                   `json:"apply_run_id"`
	ExpiresAt  *time.Time               `json:"expires_at,omitempty"`
	URL        string                   `json:"url"`
}

type incident struct {
	Key               string            `json:"key"`
	Workspace         string            `json:"workspace"`
	Class             notify.Class      `json:"class"`
	Severity          notify.Severity   `json:"severity"`
	Owner             string            `json:"owner"`
	Team              string            `json:"team"`
	Labels            map[string]string `json:"labels"`
	Since             time.Time         `json:"since"`
	Counts            drift.Counts      `json:"counts"`
	Findings          []drift.Finding   `json:"findings"`
	FindingsTruncated bool              `json:"findings_truncated,omitempty"`
	Error             string            `json:"error"`
	RunID             string            `json:"run_id"`
	URL               string            `json:"url"`
	Escalated         int               `json:"escalated,omitempty"`
	// Reason says why a resolve was not a clean run's ("workspace removed").
	Reason string `json:"reason,omitempty"`
	// Group is a group incident's group (workspace is then its cause, and
	// each finding's address "WORKSPACE: ADDRESS").
	Group *group `json:"group,omitempty"`
}

type group struct {
	ID         string   `json:"id"`
	Cause      string   `json:"cause"`
	Title      string   `json:"title"`
	Workspaces []string `json:"workspaces"`
}

type delta struct {
	Added   []drift.Finding `json:"added"`
	Removed []drift.Finding `json:"removed"`
	Changed []drift.Finding `json:"changed"`
}

// buildPayload is the JSON body for m. Lists are [] rather than null and
// each is cut at maxFindings.
func buildPayload(m notify.Message) ([]byte, error) {
	in := m.Incident
	labels := in.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	fs, cut := findings(in.Findings)
	p := payload{
		Version: PayloadVersion,
		ID:      m.ID,
		Event:   m.Event,
		Incident: incident{
			Key: in.Key, Workspace: in.Workspace, Class: in.Class, Severity: in.Severity,
			Owner: in.Owner, Team: in.Team, Labels: labels, Since: in.Since.UTC(),
			Counts: in.Counts, Findings: fs, FindingsTruncated: cut,
			Error: in.Error, RunID: in.RunID, URL: in.URL, Escalated: in.Escalated, Reason: in.Reason,
		},
		At: m.At.UTC(),
	}
	if g := in.Group; g != nil {
		p.Incident.Group = &group{ID: g.ID, Cause: g.Cause, Title: g.Title, Workspaces: g.Workspaces}
	}
	if r := m.Remediation; r != nil {
		p.Remediation = &remediation{
			ID: r.ID, Mode: r.Mode, Result: r.Result, Reason: r.Reason, Resources: r.Resources,
			ApplyRunID: r.ApplyRunID, URL: r.URL,
		}
		if !r.ExpiresAt.IsZero() {
			at := r.ExpiresAt.UTC()
			p.Remediation.ExpiresAt = &at
		}
	}
	if m.Delta != nil {
		a, cutA := findings(m.Delta.Added)
		r, cutR := findings(m.Delta.Removed)
		c, cutC := findings(m.Delta.Changed)
		p.Delta = &delta{Added: a, Removed: r, Changed: c}
		p.Incident.FindingsTruncated = p.Incident.FindingsTruncated || cutA || cutR || cutC
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	return b, nil
}

func findings(fs []drift.Finding) ([]drift.Finding, bool) {
	cut := len(fs) > maxFindings
	if cut {
		fs = fs[:maxFindings]
	}
	out := make([]drift.Finding, len(fs))
	for i, f := range fs {
		if f.Attributes == nil {
			f.Attributes = []string{}
		}
		out[i] = f
	}
	return out, cut
}

// sign is the X-Driftwatch-Signature value for body sent at timestamp.
func sign(secret []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// buildHeaders are the headers of one attempt; extra come first so they
// cannot replace ours (Validate also refuses that).
func buildHeaders(m notify.Message, secret, body []byte, now time.Time, extra map[string]string) http.Header {
	h := http.Header{}
	for k, v := range extra {
		h.Set(k, v)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "driftwatch-webhook/1")
	h.Set(HeaderEvent, string(m.Event))
	h.Set(HeaderDelivery, m.ID)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, sign(secret, ts, body))
	return h
}

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock.
const DefaultTolerance = 5 * time.Minute

// Verify checks a received delivery: the signature over the timestamp
// and the raw body, and the timestamp within tolerance of now. For
// receivers written in Go (see the package doc for other languages).
func Verify(secret []byte, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts := header.Get(HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("missing or malformed " + HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("timestamp %s is %s from now, more than %s", ts, d.Round(time.Second), tolerance)
	}
	got, ok := strings.CutPrefix(header.Get(HeaderSignature), "sha256=")
	if !ok {
		return errors.New("missing or malformed " + HeaderSignature)
	}
	want := strings.TrimPrefix(sign(secret, ts, body), "sha256=")
	if !hmac.Equal([]byte(got), []byte(want)) {
		return errors.New("signature mismatch")
	}
	return nil
}
