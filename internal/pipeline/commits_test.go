package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/source"
)

func TestBlock(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	}
	write("envs/prod/main.tf", "terraform {}\n\nresource \"x\" \"a\" {\n  v = 1\n}\n\nmodule \"m\" {\n  source = \"../../modules/m\"\n}\n\nmodule \"r\" {\n  source = \"git::https://example.com/r.git\"\n}\n")
	write("envs/prod/more.tf", "resource \"x\" \"b\" {\n  count = 2\n}\n")
	write("envs/prod/j.tf.json", `{"resource": {"x": {"j": {}}}}`)
	write("modules/m/main.tf", "\nresource \"x\" \"inner\" {}\n")
	moduleDir := filepath.Join(root, "envs", "prod")
	loc := source.NewLocator()
	for addr, want := range map[string]struct {
		file       string
		start, end int
	}{
		"x.a":              {"main.tf", 3, 5},
		"x.b[1]":           {"more.tf", 1, 3},
		"module.m.x.inner": {"../../modules/m/main.tf", 2, 2},
	} {
		file, start, end, ok := block(t.Context(), loc, root, moduleDir, addr)
		require.True(t, ok, addr)
		require.Equal(t, want.file, file, addr)
		require.Equal(t, []int{want.start, want.end}, []int{start, end}, addr)
	}
	for _, addr := range []string{"x.missing", "module.r.x.remote", "x.j"} {
		_, _, _, ok := block(t.Context(), loc, root, moduleDir, addr)
		require.False(t, ok, addr)
	}
}
