package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/browsertest"
)

// TestGroupPagesInBrowser renders the status page with an open group and
// the group's page in headless chromium: the DOM holds the group, its
// members and their links, and the open badge is coloured (the
// stylesheet applied under the pages' CSP).
func TestGroupPagesInBrowser(t *testing.T) {
	bin := browsertest.Chromium(t)
	o := newHarness(t).options()
	o.Groups = groupsFixture()
	s, err := New(o)
	require.NoError(t, err)
	base := serveLoopback(t, s)

	dom := withoutStyle(browsertest.Run(t, bin, base+"/", "--dump-dom"))
	require.Contains(t, dom, `<a href="/groups/g-0123456789abcdef">aws_security_group: ingress changed on 3 resources in 2 workspaces</a>`)

	dom = withoutStyle(browsertest.Run(t, bin, base+"/groups/g-0123456789abcdef", "--dump-dom"))
	for _, want := range []string{
		`<span class="badge s-open">open</span>`,
		`<a href="/workspaces/prod-k8s">prod-k8s</a>`, `<a href="/workspaces/prod-network">prod-network</a>`,
		"aws_security_group.nodes", "aws_security_group.db", "aws_security_group.web",
		"3 resources in 2 workspaces", "2h ago",
	} {
		require.Contains(t, dom, want)
	}
	require.NotContains(t, dom, "CANARY")

	out := browsertest.ArtifactDir(t)
	for _, tt := range []struct{ file, path string }{
		{"group-page.png", "/groups/g-0123456789abcdef"},
		{"status-page-groups.png", "/"},
	} {
		shot := filepath.Join(out, tt.file)
		_ = os.Remove(shot)
		browsertest.Run(t, bin, base+tt.path, "--screenshot="+shot, "--window-size=1280,900")
		browsertest.RequirePNG(t, shot, browsertest.DriftOrange)
		t.Logf("screenshot of %s: %s", tt.path, shot)
	}
}
