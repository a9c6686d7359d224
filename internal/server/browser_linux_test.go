package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/browsertest"
)

// serveLoopback serves s (Serve: the real http.Server) on a 127.0.0.1
// port until the test ends, and returns its base URL.
func serveLoopback(t *testing.T, s *Server) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String()
}

// TestStatusPageInBrowser serves the status page from a real listener and
// renders it in headless chromium: the DOM must hold what an on-call
// engineer needs, and a screenshot is kept to look at.
func TestStatusPageInBrowser(t *testing.T) {
	bin := browsertest.Chromium(t)
	h := newHarness(t)
	s, err := New(h.options()) // the clock stays at testNow: relative times are stable
	require.NoError(t, err)
	base := serveLoopback(t, s)
	out := browsertest.ArtifactDir(t)

	t.Run("status page DOM", func(t *testing.T) {
		dom := withoutStyle(browsertest.Run(t, bin, base+"/", "--dump-dom"))
		for _, want := range []string{
			"3 of 6 need attention",
			"prod-network", "prod-k8s", "billing-db", "staging-web", "sandbox", "new-service",
			">errored<", ">forbidden<", ">drift<", ">pending<", ">clean<", ">unknown<",
			"AccessDenied: assume role",
			"team-net", "env=prod",
			"3h ago", "in 20m",
		} {
			require.Contains(t, dom, want)
		}
		// Severity order: errored, forbidden, drift, pending, clean, unknown.
		order := []string{`id="ws-billing-db"`, `id="ws-prod-k8s"`, `id="ws-prod-network"`, `id="ws-sandbox"`, `id="ws-staging-web"`, `id="ws-new-service"`}
		last := -1
		for _, id := range order {
			i := strings.Index(dom, id)
			require.Greater(t, i, last, "%s out of severity order", id)
			last = i
		}
		// Drift count of prod-network, forbidden count of prod-k8s.
		require.Regexp(t, `id="ws-prod-network"[\s\S]*?<span class="n-drift">2</span>`, dom)
		require.Regexp(t, `id="ws-prod-k8s"[\s\S]*?<span class="n-forbidden">1</span>`, dom)
	})

	t.Run("workspace page DOM", func(t *testing.T) {
		dom := withoutStyle(browsertest.Run(t, bin, base+"/workspaces/prod-network", "--dump-dom"))
		for _, want := range []string{
			"aws_security_group.web", "aws_route53_record.api", "aws_instance.bastion", "data.aws_ami.ubuntu",
			"egress[0].cidr_blocks", "ttl", "tags.Owner",
			"2 drift · 1 pending · 0 forbidden",
			"manual", "plan: timeout after 30m0s", "2m 00s", "running",
		} {
			require.Contains(t, dom, want)
		}
	})

	t.Run("screenshots", func(t *testing.T) {
		for _, tt := range []struct{ file, path string }{
			{"status-page.png", "/"},
			{"workspace-page.png", "/workspaces/prod-network"},
			{"workspace-errored-page.png", "/workspaces/billing-db"},
		} {
			shot := filepath.Join(out, tt.file)
			_ = os.Remove(shot)
			browsertest.Run(t, bin, base+tt.path, "--screenshot="+shot, "--window-size=1280,900")
			browsertest.RequirePNG(t, shot, browsertest.ErroredRed)
			t.Logf("screenshot of %s: %s", tt.path, shot)
		}
	})
}
