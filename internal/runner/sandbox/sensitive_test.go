package sandbox

import (
	"os"
	"path/filepath"
	"testing"

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

	got := SensitiveValues(dir, []string{"prod.tfvars", other, "missing.tfvars"},
		map[string]string{"from_vars": "vars-secret", "plain": "vars-plain"},
		map[string]string{"TF_VAR_from_env": "env-secret", "TF_VAR_plain": "env-plain", "OTHER": "x-value"})
	require.Equal(t, []string{"123456", "absolute-pw", "admin-user", "auto-loaded-pw", "env-secret", "json-secret", "tag-secret", "vars-secret"}, got)

	require.Empty(t, SensitiveValues(t.TempDir(), nil, map[string]string{"a": "b"}, nil), "no sensitive variable: nothing")
	require.Empty(t, SensitiveValues(filepath.Join(dir, "nope"), nil, nil, nil), "missing dir: nothing, no panic")
}
