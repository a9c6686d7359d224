package tftest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Tools returns the provisioned binaries (terraform and, where built, tofu)
// and the CLI config pointing at the provider mirror.
func Tools(t testing.TB) (bins []string, cliConfig string) {
	t.Helper()
	Short(t, "Terraform/OpenTofu")
	bins = strings.Fields(os.Getenv("DRIFTWATCH_TF_BINARIES"))
	cliConfig = os.Getenv("DRIFTWATCH_TF_CLI_CONFIG")
	if len(bins) == 0 || cliConfig == "" {
		Unavailable(t, "Terraform test tools not provisioned (DRIFTWATCH_TF_BINARIES / DRIFTWATCH_TF_CLI_CONFIG); run `make test`")
	}
	return bins, cliConfig
}

// Jail returns the bubblewrap binary the local runner's jail uses here.
func Jail(t testing.TB) string {
	t.Helper()
	Short(t, "the jail (bubblewrap)")
	iso, err := sandbox.DetectIsolation(sandbox.IsolationAuto, sandbox.NetworkAuto)
	if err != nil {
		t.Fatal(err)
	}
	if iso.Mode != "namespaces" {
		Unavailable(t, "the jail is unavailable here ("+iso.Reason+"); `make deps` installs bubblewrap")
	}
	return iso.Bwrap
}

// JailNet returns the pasta binary that gives the local runner's jail a
// network namespace of its own here.
func JailNet(t testing.TB) string {
	t.Helper()
	Short(t, "the jail's network (pasta)")
	iso, err := sandbox.DetectIsolation(sandbox.IsolationAuto, sandbox.NetworkAuto)
	if err != nil {
		t.Fatal(err)
	}
	if iso.Network != "isolated" {
		Unavailable(t, "the jail's own network is unavailable here ("+iso.NetworkReason+"); `make deps` installs passt")
	}
	return iso.Pasta
}

// Program returns the path of a program a test runs (git, flock), which
// `make deps` provides.
func Program(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, name+" is not on PATH; `make deps` installs it")
	}
	return p
}

// Unavailable fails the test under `make test` (DRIFTWATCH_E2E=1), where
// everything a test needs is provisioned, and skips it elsewhere: the one
// rule for a test of a real component whose tool is missing.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("DRIFTWATCH_E2E") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Short skips a test of a real component (Terraform, the jail, Chromium, a
// cluster, an object store, the image) under `go test -short`: `make
// test-short` runs the unit tests alone, with no tools, whether or not
// they are here. `make test` runs these tests.
func Short(t testing.TB, tool string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs " + tool + "; `make test` runs it")
	}
}
