package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSensitiveValues(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	write("variables.tf", `
variable "pw" {
  type      = string
  sensitive = true
}
variable "pin" { sensitive = "true" }
variable "obj" { sensitive = true }
variable "from_env" { sensitive = true }
variable "from_vars" { sensitive = true }
variable "plain" {}
variable "computed" { sensitive = var.x } # not a literal: not known to be sensitive
`)
	write("more.tf.json", `{"variable": {"json_pw": {"sensitive": true}}}`)
	write("terraform.tfvars", `pw = "auto-loaded-pw"
plain = "not-a-secret"
computed = "computed-value"
`)
	write("a.auto.tfvars.json", `{"json_pw": "json-secret", "plain": "also-plain"}`)
	write("broken.auto.tfvars", `pin = `) // unparsable: skipped, never fatal
	write("prod.tfvars", `pin = 123456
obj = { user = "admin-user", tags = ["tag-secret", true], n = null }
`)
	other := filepath.Join(t.TempDir(), "abs.tfvars")
	require.NoError(t, os.WriteFile(other, []byte(`pw = "absolute-pw"`), 0o600))

	got := SensitiveValues(t.Context(), dir, dir, []string{"prod.tfvars", other, "missing.tfvars"},
		map[string]string{"from_vars": "vars-secret", "plain": "vars-plain"},
		map[string]string{"TF_VAR_from_env": "env-secret", "TF_VAR_plain": "env-plain", "OTHER": "x-value"})
	require.Equal(t, []string{"123456", "absolute-pw", "admin-user", "auto-loaded-pw", "env-secret", "json-secret", "tag-secret", "vars-secret"}, got)

	require.Empty(t, SensitiveValues(t.Context(), "", t.TempDir(), nil, map[string]string{"a": "b"}, nil), "no sensitive variable: nothing")
	require.Empty(t, SensitiveValues(t.Context(), "", filepath.Join(dir, "nope"), nil, nil, nil), "missing dir: nothing, no panic")
}

// TestSensitiveValuesUnsafeFiles: the module's files come from a source,
// which is not trusted. A named pipe, a link to /dev/zero or a link out of
// the tree is skipped at once (reading a pipe would block), while links inside
// the tree, also above the module directory, are still read.
func TestSensitiveValuesUnsafeFiles(t *testing.T) {
	root := t.TempDir()
	module := filepath.Join(root, "envs", "prod")
	outside := t.TempDir()
	write := func(path, body string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	}
	fifo := func(path string) {
		t.Helper()
		require.NoError(t, syscall.Mkfifo(path, 0o600))
		t.Cleanup(func() { // releases a reader that blocked after all
			if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		})
	}
	write(filepath.Join(module, "variables.tf"), `variable "pw" { sensitive = true }`)
	write(filepath.Join(root, "shared", "variables.tf"), `variable "token" { sensitive = true }`)
	require.NoError(t, os.Symlink("../../shared/variables.tf", filepath.Join(module, "shared.tf")))
	write(filepath.Join(module, "terraform.tfvars"), `pw = "pw-value"
token = "token-value"
`)
	write(filepath.Join(outside, "out.tf"), `variable "out" { sensitive = true }`)
	write(filepath.Join(outside, "out.tfvars"), `out = "outside-value"`)
	fifo(filepath.Join(module, "evil.tf"))
	fifo(filepath.Join(module, "evil.auto.tfvars"))
	fifo(filepath.Join(outside, "pipe"))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(module, "zero.tf")))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(module, "zero.auto.tfvars")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "pipe"), filepath.Join(module, "pipe.tf")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "out.tf"), filepath.Join(module, "out.tf")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "out.tfvars"), filepath.Join(module, "out.auto.tfvars")))

	done := make(chan []string, 1)
	go func() {
		done <- SensitiveValues(t.Context(), root, module, []string{"evil.auto.tfvars", "zero.auto.tfvars"}, nil, nil)
	}()
	select {
	case got := <-done:
		require.Equal(t, []string{"pw-value", "token-value"}, got)
	case <-time.After(20 * time.Second):
		t.Fatal("SensitiveValues blocked on a file of the source")
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.Empty(t, SensitiveValues(ctx, root, module, nil, nil, nil), "a done context reads nothing")
}
