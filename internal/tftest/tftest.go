package tftest

import (
	"os"
	"strings"
	"testing"
)

// Tools returns the provisioned binaries (terraform and, where built, tofu)
// and the CLI config pointing at the provider mirror.
func Tools(t testing.TB) (bins []string, cliConfig string) {
	t.Helper()
	bins = strings.Fields(os.Getenv("DRIFTWATCH_TF_BINARIES"))
	cliConfig = os.Getenv("DRIFTWATCH_TF_CLI_CONFIG")
	if len(bins) == 0 || cliConfig == "" {
		if os.Getenv("DRIFTWATCH_E2E") == "1" {
			t.Fatal("DRIFTWATCH_TF_BINARIES / DRIFTWATCH_TF_CLI_CONFIG not set: run `make test`")
		}
		t.Skip("Terraform test tools not provisioned; run `make test`")
	}
	return bins, cliConfig
}
