package local

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// Every backend_config value, and every value of a backend_config file,
// is a secret: real Terraform prints the http backend's address (token in
// its query string) when the backend cannot be reached, and quotes a
// backend_config file's line in a diagnostic. The canaries appear nowhere:
// not in the run log, the error (its chain included), the result, nor the
// runner's own log. A token in a URL the backend block itself holds (no
// known value) loses its query string all the same.
func TestBackendConfigRedacted(t *testing.T) {
	bins, cli := tftest.Tools(t)
	const canary = "CANARY-bc"
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			t.Parallel()
			for name, tc := range map[string]struct {
				block    string // the backend block's body
				config   []string
				file     string // backend.hcl in the module, when set
				wantLine string // in the run log, redacted
			}{
				// (Short names: the work dir must stay under 88 bytes.)
				"inline": {
					config: []string{
						"address=http://127.0.0.1:1/state?token=" + canary + "-query-3e1f",
						"username=" + canary + "-user-77a0",
						"retry_max=0",
					},
					wantLine: `Get "[REDACTED]"`,
				},
				"file": {
					config: []string{"address=http://127.0.0.1:1/state", "backend.hcl"},
					file: "password = \"" + canary + "-file-pw-91c2\"\n" +
						"bogus_argument = \"" + canary + "-file-quoted-0d4b\"\n",
					wantLine: `bogus_argument = "[REDACTED]"`,
				},
				"block": {
					block:    `address = "http://127.0.0.1:1/state?token=` + canary + `-block-5a6b"` + "\nretry_max = 0",
					wantLine: `Get "http://127.0.0.1:1/state?[REDACTED]"`,
				},
			} {
				t.Run(name, func(t *testing.T) {
					src := t.TempDir()
					main := "terraform {\n  backend \"http\" {\n" + tc.block + "\n  }\n}\nresource \"terraform_data\" \"x\" { input = \"a\" }\n"
					require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(main), 0o644))
					if tc.file != "" {
						require.NoError(t, os.WriteFile(filepath.Join(src, "backend.hcl"), []byte(tc.file), 0o644))
					}
					var daemonLog bytes.Buffer
					r := New(slog.New(slog.NewTextHandler(&daemonLog, &slog.HandlerOptions{Level: slog.LevelDebug})))
					l := runlog.New(1<<20, nil)
					req := terraform.Request{RunID: "r1", Workspace: "ws", Binary: bin, Source: terraform.Source{Path: src},
						WorkDir: t.TempDir(), Timeout: 2 * time.Minute, KillGrace: time.Second, CLIConfigFile: cli,
						BackendConfig: tc.config, Backend: backend.DefaultPolicy(), Log: l}
					res, err := r.Run(t.Context(), req)
					require.Error(t, err)
					l.Close("errored")
					log := string(l.Bytes())
					t.Log(log)
					t.Log(err)
					// OpenTofu 1.12 wraps the diagnostic's lines elsewhere.
					require.Contains(t, strings.Join(strings.Fields(log), " "), tc.wantLine)
					var re *terraform.Error
					require.ErrorAs(t, err, &re)
					require.Equal(t, "init", re.Phase)
					for what, text := range map[string]string{
						"run log":     log,
						"error":       err.Error(),
						"error chain": fmt.Sprintf("%+v %v", re.Err, re.Reason),
						"result":      fmt.Sprintf("%+v", res),
						"daemon log":  daemonLog.String(),
					} {
						require.NotContains(t, text, canary, what)
					}
				})
			}
		})
	}
}
