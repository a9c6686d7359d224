package pipeline

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/drift/unmanaged"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

func scanTarget(name string) Target {
	t := target(name)
	t.Request.Query = &terraform.Query{}
	t.Scan = &Scan{}
	return t
}

func file(path string) drift.Listed {
	return drift.Listed{Type: "dwtest_file", DisplayName: path, Identity: map[string]string{"filename": path}}
}

func managed(addr, path string) drift.Managed {
	return drift.Managed{Address: addr, Type: "dwtest_file", ID: path, Identity: map[string]string{"filename": path}}
}

// A one-shot batch: the scan runs after the workspaces whatever the
// order given, and compares with their plans' managed instances.
func TestRunAllScansAfterWorkspaces(t *testing.T) {
	fr := &fakeRunner{results: map[string]runner.Result{
		"a":    {Plan: &planparse.Plan{Managed: []drift.Managed{managed("dwtest_file.x", "/d/x"), managed("dwtest_file.s", "/d/s")}}},
		"b":    {Plan: &planparse.Plan{Managed: []drift.Managed{managed("dwtest_file.s", "/d/s")}}},
		"scan": {Listed: []drift.Listed{file("/d/x"), file("/d/s"), file("/d/hand")}},
	}}
	res := newAuditor(fr).RunAll(t.Context(), []Target{scanTarget("scan"), target("a"), target("b")}, 4, nil)
	require.Equal(t, "scan", fr.order[2], "the scan runs last")
	require.Equal(t, drift.StatusClean, res[1].Status)
	require.Equal(t, []drift.Managed{managed("dwtest_file.x", "/d/x"), managed("dwtest_file.s", "/d/s")}, res[1].Managed)
	s := res[0]
	require.Equal(t, drift.StatusDrift, s.Status, s.Error)
	require.Equal(t, []drift.Finding{
		{Kind: drift.KindManagedTwice, Address: `dwtest_file[filename="/d/s"]`, Type: "dwtest_file", Action: "none", Detail: "/d/s",
			ManagedBy: []string{"a: dwtest_file.s", "b: dwtest_file.s"}},
		{Kind: drift.KindUnmanaged, Address: `dwtest_file[filename="/d/hand"]`, Type: "dwtest_file", Action: "none", Detail: "/d/hand"},
	}, s.Findings)
	require.Nil(t, s.Managed)
}

// A workspace whose state is unknown (its run errored) makes the scan
// errored, naming it, instead of calling its resources unmanaged.
func TestScanWithUnknownWorkspace(t *testing.T) {
	fr := &fakeRunner{
		results: map[string]runner.Result{"scan": {Listed: []drift.Listed{file("/d/x")}}},
		errs:    map[string]error{"a": &terraform.Error{Phase: "plan", Reason: "boom"}},
	}
	res := newAuditor(fr).RunAll(t.Context(), []Target{target("a"), scanTarget("scan")}, 1, nil)
	require.Equal(t, drift.StatusErrored, res[1].Status)
	require.Contains(t, res[1].Error, "the state of 1 workspace(s) is not known yet (a)")
	require.Empty(t, res[1].Findings)
}

// The daemon's Fleet: its error is the scan's; a failed query is the
// run's error as for a plan.
func TestScanFleet(t *testing.T) {
	fr := &fakeRunner{
		results: map[string]runner.Result{"scan": {Listed: []drift.Listed{file("/d/x")}}},
		errs:    map[string]error{"broken": &terraform.Error{Phase: "query", Reason: "no list blocks"}},
	}
	a := newAuditor(fr)
	a.Fleet = FleetFunc(func(context.Context) ([]unmanaged.Workspace, []string, error) {
		return nil, nil, errors.New("store closed")
	})
	require.Equal(t, "scan: workspace states: store closed", a.Check(t.Context(), scanTarget("scan")).Error)
	r := a.Check(t.Context(), scanTarget("broken"))
	require.Equal(t, drift.StatusErrored, r.Status)
	require.Contains(t, r.Error, "no list blocks")

	a.Fleet = FleetFunc(func(context.Context) ([]unmanaged.Workspace, []string, error) {
		return []unmanaged.Workspace{{Name: "a", Managed: []drift.Managed{managed("dwtest_file.x", "/d/x")}}}, nil, nil
	})
	r = a.Check(t.Context(), scanTarget("scan"))
	require.Equal(t, drift.StatusClean, r.Status)
	require.Empty(t, r.Findings)
	// Checked alone, without a Fleet, a scan cannot tell.
	require.Equal(t, drift.StatusErrored, newAuditor(fr).Check(t.Context(), scanTarget("scan")).Status)
}
