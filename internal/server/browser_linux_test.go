package server

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chromiumPath finds chromium, skipping the test when it is absent unless
// DRIFTWATCH_E2E=1 (make test, CI) demands it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("DRIFTWATCH_E2E") == "1" {
			t.Fatalf("chromium not found on PATH (DRIFTWATCH_E2E=1 requires it; apt-get install -y chromium): %v", err)
		}
		t.Skip("chromium not found on PATH; set DRIFTWATCH_E2E=1 to make this a failure")
	}
	return p
}

// artifactDir is where screenshots go: $DRIFTWATCH_ARTIFACTS when set (CI
// keeps them), otherwise the test's temporary directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("DRIFTWATCH_ARTIFACTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// runChromium runs one headless chromium with args plus url and returns
// its stdout. Chromium runs in its own process group, which is killed by
// PID when the call returns, so no renderer or zygote outlives the test.
func runChromium(t *testing.T, bin string, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	home := t.TempDir()
	argv := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir=" + filepath.Join(home, "profile"),
	}, args...)
	argv = append(argv, url)
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	defer func() {
		// Kill the whole group (chromium's helpers too), by the PID we
		// started; ESRCH just means it already exited.
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Logf("kill chromium process group %d: %v", pid, err)
		}
	}()
	err := cmd.Wait()
	require.NoError(t, err, "chromium %s: stderr:\n%s", strings.Join(args, " "), stderr.String())
	return stdout.String()
}

// TestStatusPageInBrowser serves the status page from a real listener and
// renders it in headless chromium: the DOM must hold what an on-call
// engineer needs, and a screenshot is kept to look at.
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromiumPath(t)
	h := newHarness(t)
	s, err := New(h.options()) // the clock stays at testNow: relative times are stable
	require.NoError(t, err)
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
	base := "http://" + ln.Addr().String()
	out := artifactDir(t)

	t.Run("status page DOM", func(t *testing.T) {
		dom := withoutStyle(runChromium(t, bin, base+"/", "--dump-dom"))
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
		dom := withoutStyle(runChromium(t, bin, base+"/workspaces/prod-network", "--dump-dom"))
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
			runChromium(t, bin, base+tt.path, "--screenshot="+shot, "--window-size=1280,900")
			requireRenderedPNG(t, shot)
			t.Logf("screenshot of %s: %s", tt.path, shot)
		}
	})
}

// requireRenderedPNG checks that path is a 1280×900 PNG that shows a
// styled page: many colours, and the errored badge's red (so the inline
// stylesheet was allowed by the Content-Security-Policy and applied).
func requireRenderedPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(20_000), "screenshot is suspiciously small")
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 1280, 900), img.Bounds())
	colours := map[color.RGBA]bool{}
	styled := false
	for y := 0; y < 900; y += 2 {
		for x := 0; x < 1280; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
			colours[c] = true
			if near(c, color.RGBA{0xb9, 0x1c, 0x1c, 255}) {
				styled = true
			}
		}
	}
	require.Greater(t, len(colours), 64, "screenshot has too few colours to be a rendered page")
	require.True(t, styled, "no errored-red pixel: the stylesheet did not apply")
}

func near(a, b color.RGBA) bool {
	d := func(x, y uint8) int {
		if x > y {
			return int(x - y)
		}
		return int(y - x)
	}
	return d(a.R, b.R) <= 8 && d(a.G, b.G) <= 8 && d(a.B, b.B) <= 8
}
