package server

import (
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/browsertest"
)

// TestRemediationPagesInBrowser renders the remediation parts of the pages
// in headless chromium: what an on-call engineer reads before approving.
func TestRemediationPagesInBrowser(t *testing.T) {
	bin := browsertest.Chromium(t)
	h := newHarness(t)
	base := serveRemediation(t, h, remediationFixture(h))
	out := browsertest.ArtifactDir(t)

	t.Run("status page DOM", func(t *testing.T) {
		dom := withoutStyle(browsertest.Run(t, bin, base+"/", "--dump-dom"))
		for _, want := range []string{
			"Remediation", ">enabled<", "pending approval", "approved, waiting",
			`href="/remediations/rem-pend"`, "review rem-pend", "approval window over",
		} {
			require.Contains(t, dom, want)
		}
	})
	t.Run("workspace page DOM", func(t *testing.T) {
		dom := withoutStyle(browsertest.Run(t, bin, base+"/workspaces/prod-network", "--dump-dom"))
		for _, want := range []string{
			">pending<", ">refused<", ">applied<", ">failed<", ">expired<",
			"driftwatch approve rem-pend --hash " + testHash,
			"the apply would change 3 resources; remediation.max_resources is 2",
			"terraform apply had started: infrastructure and state may have changed.",
		} {
			require.Contains(t, dom, want)
		}
		require.NotContains(t, dom, secretValue)
	})
	t.Run("remediation page DOM", func(t *testing.T) {
		dom := withoutStyle(browsertest.Run(t, bin, base+"/remediations/rem-pend", "--dump-dom"))
		for _, want := range []string{
			"aws_route53_record.api", "aws_security_group.web", "egress[0].cidr_blocks", "ttl",
			testHash, "driftwatch reject rem-pend",
		} {
			require.Contains(t, dom, want)
		}
		require.NotContains(t, dom, secretValue)
	})
	// Run pages need a read credential: the browser signs in with HTTP
	// Basic auth, any user name and the token as password.
	signedIn := strings.Replace(base, "http://", "http://on-call:"+testToken+"@", 1)
	t.Run("run page DOM", func(t *testing.T) {
		dom := withoutStyle(browsertest.Run(t, bin, signedIn+"/runs/run-net-fail", "--dump-dom"))
		require.Contains(t, dom, "apply: aws_security_group.web: UnauthorizedOperation")
		require.NotContains(t, dom, testToken)
		dom = withoutStyle(browsertest.Run(t, bin, base+"/runs/run-net-fail", "--dump-dom"))
		require.NotContains(t, dom, "UnauthorizedOperation", "not signed in")
	})
	t.Run("screenshots", func(t *testing.T) {
		for _, tt := range []struct {
			file, base, path string
			badge            color.RGBA
		}{
			{"remediations-workspace-page.png", base, "/workspaces/prod-network", browsertest.DriftOrange},
			{"remediation-failed-page.png", base, "/remediations/rem-failed", browsertest.ErroredRed},
			{"status-page-remediation.png", base, "/", browsertest.ErroredRed},
			{"run-page-failed-apply.png", signedIn, "/runs/run-net-fail", browsertest.ErroredRed},
		} {
			shot := filepath.Join(out, tt.file)
			_ = os.Remove(shot)
			browsertest.Run(t, bin, tt.base+tt.path, "--screenshot="+shot, "--window-size=1280,900")
			browsertest.RequirePNG(t, shot, tt.badge)
			t.Logf("screenshot of %s: %s", tt.path, shot)
		}
	})
}
