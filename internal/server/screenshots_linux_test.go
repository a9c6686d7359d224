package server

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/browsertest"
)

// screenshotWorkspaces are the README screenshots' organisation: names,
// owners, labels, and how often each drifts, forbids or errors per run.
var screenshotWorkspaces = []struct {
	info                        WorkspaceInfo
	pDrift, pForbidden, pErrors float64
}{
	{WorkspaceInfo{Name: "prod-network", Owner: "team-net", Labels: map[string]string{"env": "prod", "team": "net"}}, 0.06, 0, 0.01},
	{WorkspaceInfo{Name: "prod-dns", Owner: "team-net", Labels: map[string]string{"env": "prod", "team": "net"}}, 0.03, 0, 0},
	{WorkspaceInfo{Name: "prod-k8s-platform", Owner: "team-platform", Labels: map[string]string{"env": "prod", "team": "platform"}}, 0.02, 0.04, 0.01},
	{WorkspaceInfo{Name: "billing-db", Owner: "team-data", Labels: map[string]string{"env": "prod", "team": "data"}}, 0.02, 0, 0.05},
	{WorkspaceInfo{Name: "payments-api", Owner: "team-pay", Labels: map[string]string{"env": "prod", "team": "pay"}}, 0.04, 0, 0.01},
	{WorkspaceInfo{Name: "identity", Owner: "team-sec", Labels: map[string]string{"env": "prod", "team": "sec"}}, 0.01, 0, 0},
	{WorkspaceInfo{Name: "edge-cdn", Owner: "team-web", Labels: map[string]string{"env": "prod", "team": "web"}}, 0.05, 0, 0.02},
	{WorkspaceInfo{Name: "data-lake", Owner: "team-data", Labels: map[string]string{"env": "prod", "team": "data"}}, 0.03, 0, 0.02},
	{WorkspaceInfo{Name: "staging-web", Owner: "team-web", Labels: map[string]string{"env": "staging", "team": "web"}}, 0.08, 0, 0.03},
	{WorkspaceInfo{Name: "staging-network", Owner: "team-net", Labels: map[string]string{"env": "staging", "team": "net"}}, 0.05, 0, 0.01},
	{WorkspaceInfo{Name: "ci-runners", Owner: "team-platform", Labels: map[string]string{"env": "tools", "team": "platform"}}, 0.04, 0, 0.04},
	{WorkspaceInfo{Name: "sandbox", Owner: "team-platform", Labels: map[string]string{"env": "dev", "team": "platform"}}, 0.1, 0.02, 0.02},
}

// screenshotStore is a real store holding 30 days of runs of the
// screenshot workspaces, every six hours, up to testNow: drift that comes
// and goes (kept for a few runs once seen), forbidden resources, errors. It
// is made from a fixed seed, so every screenshot shows the same history.
func screenshotStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	rng := rand.New(rand.NewPCG(19, 2026))
	sg := drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update",
		Attributes: []string{"egress[0].cidr_blocks", "tags.Owner"}}
	rec := drift.Finding{Kind: drift.KindDrift, Address: "aws_route53_record.api", Type: "aws_route53_record", Action: "update", Attributes: []string{"ttl"}}
	bucket := drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket_policy.logs", Type: "aws_s3_bucket_policy", Action: "update", Attributes: []string{"policy"}}
	cm := drift.Finding{Kind: drift.KindForbidden, Address: `kubernetes_config_map.flags["checkout"]`, Type: "kubernetes_config_map", Action: "update",
		Attributes: []string{}, SeenIn: []string{drift.SeenInConfig, drift.SeenInState}}
	start := testNow.Add(-30 * 24 * time.Hour).Truncate(6 * time.Hour)
	n := 0
	for i, w := range screenshotWorkspaces {
		driftLeft, forbiddenLeft := 0, 0
		for at := start.Add(time.Duration(i) * 7 * time.Minute); at.Before(testNow); at = at.Add(6 * time.Hour) {
			n++
			id := fmt.Sprintf("%016x", n)
			status, fs, errMsg := drift.StatusClean, []drift.Finding(nil), ""
			if driftLeft == 0 && rng.Float64() < w.pDrift {
				driftLeft = 1 + rng.IntN(8)
			}
			if forbiddenLeft == 0 && rng.Float64() < w.pForbidden {
				forbiddenLeft = 2 + rng.IntN(10)
			}
			switch {
			case rng.Float64() < w.pErrors:
				status, errMsg = drift.StatusErrored, "plan: AccessDenied: assume role arn:aws:iam::123456789012:role/drift-reader"
			case forbiddenLeft > 0:
				status, fs = drift.StatusForbidden, []drift.Finding{cm}
				forbiddenLeft--
			case driftLeft > 0:
				status = drift.StatusDrift
				fs = []drift.Finding{[]drift.Finding{sg, rec, bucket}[(i+n)%3]}
				driftLeft--
			}
			took := time.Duration(40+rng.IntN(200)) * time.Second
			require.NoError(t, st.StartRun(t.Context(), store.Run{ID: id, Workspace: w.info.Name, Trigger: "schedule", StartedAt: at}))
			_, _, err := st.FinishRun(t.Context(), store.Run{ID: id, FinishedAt: at.Add(took), Status: status, Findings: fs, Error: errMsg})
			require.NoError(t, err)
		}
	}
	return st
}

// TestScreenshots renders the workspace list, a workspace's page and the
// Trends page of a month of history in headless Chromium and checks each
// screenshot is a styled, rendered page. With DRIFTWATCH_SCREENSHOTS=DIR
// (make screenshots) they are written there: the README's images.
func TestScreenshots(t *testing.T) {
	bin := browsertest.Chromium(t)
	h := newHarness(t)
	var infos []WorkspaceInfo
	for _, w := range screenshotWorkspaces {
		w.info.Schedule = "0 */6 * * *"
		w.info.NextRun = testNow.Add(3 * time.Hour)
		infos = append(infos, w.info)
	}
	h.setWorkspaces(infos)
	o := h.options()
	o.Store = screenshotStore(t)
	s, err := New(o)
	require.NoError(t, err)
	base := serveLoopback(t, s)
	out := os.Getenv("DRIFTWATCH_SCREENSHOTS")
	if out == "" {
		out = browsertest.ArtifactDir(t)
	}
	require.NoError(t, os.MkdirAll(out, 0o755))
	for _, tt := range []struct {
		file, path string
	}{
		{"workspaces.png", "/"},
		{"workspace.png", "/workspaces/prod-k8s-platform"},
		{"trends.png", "/trends"},
	} {
		shot := filepath.Join(out, tt.file)
		_ = os.Remove(shot)
		browsertest.Run(t, bin, base+tt.path, "--screenshot="+shot, "--window-size=1280,900")
		browsertest.RequirePNG(t, shot, browsertest.DriftOrange)
		t.Logf("screenshot of %s: %s", tt.path, shot)
	}
}
