//go:build linux

package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
	"github.com/stretchr/testify/require"
)

// Chromium finds chromium, skipping the test when it is absent unless
// DRIFTWATCH_E2E=1 (make test, CI) demands it.
func Chromium(t *testing.T) string {
	t.Helper()
	tftest.Short(t, "Chromium")
	p, err := exec.LookPath("chromium")
	if err != nil {
		tftest.Unavailable(t, fmt.Sprintf("chromium not found on PATH (`make deps` installs it): %v", err))
	}
	return p
}

// ArtifactDir is where screenshots go: $DRIFTWATCH_ARTIFACTS when set (CI
// keeps them), otherwise the test's temporary directory.
func ArtifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("DRIFTWATCH_ARTIFACTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// Run runs one headless chromium with args plus url and returns
// its stdout. Chromium runs in its own process group, which is killed by
// PID when the call returns, so no renderer or zygote outlives the test.
func Run(t *testing.T, bin string, url string, args ...string) string {
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

// Badge colours of the status page's stylesheet: finding one in a
// screenshot proves the inline stylesheet was allowed by the
// Content-Security-Policy and applied.
var (
	ErroredRed  = color.RGBA{0xb9, 0x1c, 0x1c, 255}
	DriftOrange = color.RGBA{0xc2, 0x41, 0x0c, 255}
)

// RequirePNG checks that path is a 1280×900 PNG of a rendered page (many
// colours) showing the given badge colour.
func RequirePNG(t *testing.T, path string, badge color.RGBA) {
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
			if near(c, badge) {
				styled = true
			}
		}
	}
	require.Greater(t, len(colours), 64, "screenshot has too few colours to be a rendered page")
	require.True(t, styled, "no pixel of the badge colour %v: the stylesheet did not apply", badge)
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
