package pages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// pageRemediationsLimit is how many remediations a workspace page lists.
const pageRemediationsLimit = 10

// listRefusalsLimit is how many refusals a list row shows; the
// remediation's page has them all.
const listRefusalsLimit = 3

// changeEntry, refusal and outcome decode the JSON documents stored on a
// remediation (engine.Entry, engine.Refusal, engine.Outcome).
// The server reads them as documents rather than import the remediation engine, which
// drives Terraform. They hold addresses, actions, attribute paths and
// one-line reasons: never a value.
type changeEntry struct {
	Address    string   `json:"address"`
	Action     string   `json:"action"`
	Attributes []string `json:"attributes"`
}

type refusal struct {
	Code    string `json:"code"`
	Address string `json:"address"`
	Reason  string `json:"reason"`
}

type outcome struct {
	Result   store.RemediationState `json:"result"`
	Reason   string                 `json:"reason"`
	Refusals []refusal              `json:"refusals"`
	// Before is the change set of the fresh plan the apply compared with
	// the approved one.
	Before struct {
		Entries []changeEntry `json:"entries"`
	} `json:"before"`
	Residual     []drift.Finding `json:"residual"`
	ApplyStarted bool            `json:"apply_started"`
	Tool         string          `json:"tool"`
	Commit       string          `json:"commit"`
}

// remediationView is a remediation as the pages show it.
type remediationView struct {
	store.Remediation
	Entries  []changeEntry
	Refusals []refusal // at detection
	Outcome  *outcome  // nil until an apply ended
	// Unreadable names the stored documents that could not be decoded.
	Unreadable []string
	// Lapsed: pending, but past ExpiresAt (the daemon expires it within a
	// second; an approval is refused already).
	Lapsed bool
	// Held: approved, but the kill switch keeps it from applying.
	Held bool
}

// newRemediationView decodes r's documents; stopped is the kill switch
// (disabled by config or paused).
func newRemediationView(r store.Remediation, now time.Time, stopped bool) remediationView {
	v := remediationView{Remediation: r}
	// decode reports whether raw held a readable document (not empty,
	// not null).
	decode := func(name string, raw json.RawMessage, dst any) bool {
		if len(raw) == 0 || string(raw) == "null" {
			return false
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			v.Unreadable = append(v.Unreadable, name)
			return false
		}
		return true
	}
	var cs struct {
		Entries []changeEntry `json:"entries"`
	}
	decode("change set", r.ChangeSet, &cs)
	v.Entries = cs.Entries
	decode("refusals", r.Refusals, &v.Refusals)
	var out outcome
	if decode("outcome", r.Outcome, &out) {
		v.Outcome = &out
	}
	v.Lapsed = r.State == store.RemediationPending && !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
	v.Held = r.State == store.RemediationApproved && stopped
	return v
}

// Reasons are the refusals that explain the state: the envelope's at
// detection, else the apply's.
func (v remediationView) Reasons() []refusal {
	if len(v.Refusals) > 0 || v.Outcome == nil {
		return v.Refusals
	}
	return v.Outcome.Refusals
}

// ReasonsHead is what a list row shows of Reasons.
func (v remediationView) ReasonsHead() []refusal {
	rs := v.Reasons()
	return rs[:min(len(rs), listRefusalsLimit)]
}

// ReasonsMore is how many of Reasons a list row leaves out.
func (v remediationView) ReasonsMore() int {
	return max(len(v.Reasons())-listRefusalsLimit, 0)
}

// Summary says in one line where the remediation stands, when its
// refusals do not say it.
func (v remediationView) Summary() string {
	switch v.State {
	case store.RemediationPending:
		if v.Lapsed {
			return "approval window over: an approval is refused; it expires unapplied"
		}
		return "waits for approval: nothing is applied until someone approves it"
	case store.RemediationApproved:
		if v.Held {
			return "approved, held by the kill switch (paused, or disabled in the config): it applies once remediation is on again"
		}
		return "approved: it applies in the workspace's next free run slot"
	case store.RemediationRunning:
		return "applying now"
	case store.RemediationApplied:
		return "applied: the verification plan shows no drift and no change left at the approved addresses"
	case store.RemediationExpired:
		if v.Reason == "" {
			return "expired unapproved: nothing was applied"
		}
	case store.RemediationRejected:
		return "rejected: nothing was applied; the same change set is not proposed again"
	}
	return v.Reason
}

// FreshPlanDiffers reports an outcome whose fresh plan would have changed
// something else than the approved change set (refused plan_changed).
func (v remediationView) FreshPlanDiffers() bool {
	return v.Outcome != nil && len(v.Outcome.Before.Entries) > 0 &&
		!slices.EqualFunc(v.Outcome.Before.Entries, v.Entries, func(a, b changeEntry) bool {
			return a.Address == b.Address && a.Action == b.Action && slices.Equal(a.Attributes, b.Attributes)
		})
}

// remediationSummary is the status page's remediation line.
type remediationSummary struct {
	Enabled, Paused bool
	// Pending await approval, oldest first.
	Pending  []remediationView
	Approved int // approved, waiting for their slot or the kill switch
	Running  int
}

// remediationSummary builds the status page's remediation line from the
// remediations of configured workspaces (nil without remediation).
func (p *Pages) remediationSummary(ctx context.Context, vs []view.WorkspaceView) (*remediationSummary, error) {
	if p.src.Rem == nil {
		return nil, nil
	}
	enabled, paused, err := p.src.Rem.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("remediation status: %w", err)
	}
	rs, err := p.src.Rem.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list remediations: %w", err)
	}
	configured := map[string]bool{}
	for _, v := range vs {
		configured[v.Name] = true
	}
	sum := &remediationSummary{Enabled: enabled, Paused: paused}
	now := p.src.Now()
	for _, r := range slices.Backward(rs) {
		if !configured[r.Workspace] {
			continue
		}
		switch r.State {
		case store.RemediationPending:
			sum.Pending = append(sum.Pending, newRemediationView(r, now, !enabled || paused))
		case store.RemediationApproved:
			sum.Approved++
		case store.RemediationRunning:
			sum.Running++
		}
	}
	return sum, nil
}

// remediationViews returns the newest remediations of a workspace, at
// most limit (nil without remediation).
func (p *Pages) remediationViews(ctx context.Context, workspace string, limit int) ([]remediationView, error) {
	if p.src.Rem == nil {
		return nil, nil
	}
	stopped, err := p.remediationStopped(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := p.src.Rem.List(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: remediations: %w", workspace, err)
	}
	now := p.src.Now()
	out := make([]remediationView, 0, min(len(rs), limit))
	for _, r := range rs[:min(len(rs), limit)] {
		out = append(out, newRemediationView(r, now, stopped))
	}
	return out, nil
}

// remediationStopped reports the kill switch: disabled by config or paused.
func (p *Pages) remediationStopped(ctx context.Context) (bool, error) {
	enabled, paused, err := p.src.Rem.Status(ctx)
	if err != nil {
		return false, fmt.Errorf("remediation status: %w", err)
	}
	return !enabled || paused, nil
}

// runRemediation returns the remediation a run proposed (a detection run)
// or performed (its apply run), or nil.
func (p *Pages) runRemediation(ctx context.Context, run store.Run) (*remediationView, error) {
	if p.src.Rem == nil {
		return nil, nil
	}
	rs, err := p.src.Rem.List(ctx, run.Workspace)
	if err != nil {
		return nil, fmt.Errorf("run %q: remediations: %w", run.ID, err)
	}
	i := slices.IndexFunc(rs, func(r store.Remediation) bool { return r.ApplyRunID == run.ID || r.DetectRunID == run.ID })
	if i < 0 {
		return nil, nil
	}
	stopped, err := p.remediationStopped(ctx)
	if err != nil {
		return nil, err
	}
	v := newRemediationView(rs[i], p.src.Now(), stopped)
	return &v, nil
}

type remediationPageData struct {
	page
	R       remediationView
	APIBase string
}

// Remediation serves GET /remediations/{id}: the full change set, the
// refusals and the outcome, and for a pending one the commands that
// approve or reject exactly this change set. The page is read-only.
func (p *Pages) Remediation(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	x, err := p.src.Rem.Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		p.render(w, r, http.StatusNotFound, p.message, messagePageData{
			page:    p.newPage(r, "driftwatch: unknown remediation", false),
			Heading: "Unknown remediation",
			Message: fmt.Sprintf("No remediation with id %q is recorded.", id),
		})
		return
	}
	if err != nil {
		p.pageError(w, r, fmt.Errorf("remediation %q: %w", id, err))
		return
	}
	stopped, err := p.remediationStopped(r.Context())
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	v := newRemediationView(x, p.src.Now(), stopped)
	// The page follows an apply in progress; a pending one stays still
	// while someone reads its change set.
	inFlight := x.State == store.RemediationApproved || x.State == store.RemediationRunning
	p.render(w, r, http.StatusOK, p.remediation, remediationPageData{
		page:    p.newPage(r, "driftwatch: remediation "+x.ID+" of "+x.Workspace+" ("+stateLabel(x.State)+")", inFlight),
		R:       v,
		APIBase: p.src.APIBase,
	})
}

// stateLabel words a remediation state for people: "verification failed".
func stateLabel(s store.RemediationState) string {
	return strings.ReplaceAll(string(s), "_", " ")
}

// resources counts resources in words: "1 resource", "3 resources".
func resources(n int) string {
	if n == 1 {
		return "1 resource"
	}
	return strconv.Itoa(n) + " resources"
}
