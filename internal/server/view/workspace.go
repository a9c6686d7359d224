package view

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

// StatusUnknown is the status of a configured workspace that has never
// finished a run.
const StatusUnknown drift.Status = "unknown"

// Statuses are the statuses a workspace can show, most severe first: the
// order the status page counts them in and a status filter lists them.
var Statuses = []drift.Status{
	drift.StatusErrored, drift.StatusForbidden, drift.StatusDrift,
	drift.StatusValidation, drift.StatusPending, drift.StatusClean, StatusUnknown,
}

// WorkspaceView is a configured workspace merged with its stored state.
type WorkspaceView struct {
	control.WorkspaceInfo
	State  store.WorkspaceState // zero if it never finished a run
	Status drift.Status         // State.Status, or StatusUnknown
	Counts drift.Counts
}

// mergeWorkspace combines a configured workspace with its state (ok false:
// none stored).
func mergeWorkspace(info control.WorkspaceInfo, st store.WorkspaceState, ok bool) WorkspaceView {
	v := WorkspaceView{WorkspaceInfo: info, Status: StatusUnknown}
	if !ok {
		return v
	}
	v.State = st
	if st.Status.Severity() >= 0 {
		v.Status = st.Status
	}
	v.Counts = drift.CountFindings(st.Findings)
	return v
}

// mergeWorkspaces merges every configured workspace with its state, by name.
func mergeWorkspaces(infos []control.WorkspaceInfo, states []store.WorkspaceState) []WorkspaceView {
	byName := make(map[string]store.WorkspaceState, len(states))
	for _, st := range states {
		byName[st.Workspace] = st
	}
	out := make([]WorkspaceView, 0, len(infos))
	for _, info := range infos {
		st, ok := byName[info.Name]
		out = append(out, mergeWorkspace(info, st, ok))
	}
	slices.SortFunc(out, func(a, b WorkspaceView) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// sortBySeverity orders views most severe first (errored, forbidden,
// drift, validation, pending, clean, unknown), then longest in that
// status first (oldest State.Since; an unknown since last), then by name.
func sortBySeverity(vs []WorkspaceView) {
	slices.SortFunc(vs, compareSeverity)
}

func compareSeverity(a, b WorkspaceView) int {
	if c := cmp.Compare(b.Status.Severity(), a.Status.Severity()); c != 0 {
		return c
	}
	if az, bz := a.State.Since.IsZero(), b.State.Since.IsZero(); az != bz {
		if az {
			return 1
		}
		return -1
	}
	if c := a.State.Since.Compare(b.State.Since); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// SortedFindings returns a sorted copy of fs (most severe kind first).
func SortedFindings(fs []drift.Finding) []drift.Finding {
	out := slices.Clone(fs)
	drift.SortFindings(out)
	return out
}

// RunDuration is how long a finished run took (ok false while running).
func RunDuration(r store.Run) (time.Duration, bool) {
	if r.FinishedAt.IsZero() || r.StartedAt.IsZero() {
		return 0, false
	}
	return r.FinishedAt.Sub(r.StartedAt), true
}

// LabelPairs is labels as sorted "k=v" strings.
func LabelPairs(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k+"="+labels[k])
	}
	return out
}
