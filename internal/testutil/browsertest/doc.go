//go:build linux

// Package browsertest drives Debian's headless chromium for tests of the
// status page: it finds the binary (a failure under DRIFTWATCH_E2E=1, a
// skip otherwise), runs it in its own process group killed by PID, says
// where screenshots go (DRIFTWATCH_ARTIFACTS, else the test's temporary
// directory) and checks that a screenshot is a rendered page showing a
// badge colour of the page's stylesheet.
//
// Only tests import it (internal/server, internal/testutil/e2etest). It imports no
// driftwatch package: what a page should show is the calling test's.
package browsertest
