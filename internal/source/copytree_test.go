package source

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeFiles creates files (name → content) under dir with perm, making
// parent directories as needed.
func writeFiles(t *testing.T, dir string, perm os.FileMode, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), perm))
		require.NoError(t, os.Chmod(p, perm))
	}
}

func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, 0o644, map[string]string{
		"main.tf":                             "# main\n",
		".terraform.lock.hcl":                 "# lock\n",
		"modules/net/main.tf":                 "# net\n",
		"modules/net/deep/er/x.tf":            "# deep\n",
		".terraform/terraform.tfstate":        "{}",
		".terraform/providers/p/v/provider":   "binary",
		"modules/net/.terraform/modules.json": "{}",
		".git/HEAD":                           "ref: refs/heads/main\n",
		"vendored/.git":                       "gitdir: ../.git/modules/vendored\n",
		"vendored/main.tf":                    "# vendored\n",
	})
	writeFiles(t, src, 0o755, map[string]string{"scripts/run.sh": "#!/bin/sh\n"})
	writeFiles(t, src, 0o600, map[string]string{"secret.auto.tfvars": "x = 1\n"})
	require.NoError(t, os.Chmod(filepath.Join(src, "modules/net/deep"), 0o750))
	require.NoError(t, os.Symlink("modules/net", filepath.Join(src, "net")))
	require.NoError(t, os.Symlink("../../main.tf", filepath.Join(src, "modules/net/root.tf")))
	require.NoError(t, os.Symlink(filepath.Join(src, "modules/net/main.tf"), filepath.Join(src, "modules/abs.tf")))
	require.NoError(t, os.Symlink("missing.tf", filepath.Join(src, "dangling.tf")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644))

	dst := filepath.Join(t.TempDir(), "copy") // created by CopyTree
	require.NoError(t, CopyTree(t.Context(), src, dst))
	require.Equal(t, map[string]string{
		"main.tf":                  "-rw-r--r-- # main\n",
		".terraform.lock.hcl":      "-rw-r--r-- # lock\n",
		"modules":                  "dir",
		"modules/abs.tf":           "-> net/main.tf",
		"modules/net":              "dir",
		"modules/net/main.tf":      "-rw-r--r-- # net\n",
		"modules/net/root.tf":      "-> ../../main.tf",
		"modules/net/deep":         "dir",
		"modules/net/deep/er":      "dir",
		"modules/net/deep/er/x.tf": "-rw-r--r-- # deep\n",
		"vendored":                 "dir",
		"vendored/main.tf":         "-rw-r--r-- # vendored\n",
		"scripts":                  "dir",
		"scripts/run.sh":           "-rwxr-xr-x #!/bin/sh\n",
		"secret.auto.tfvars":       "-rw------- x = 1\n",
		"net":                      "-> modules/net",
		"dangling.tf":              "-> missing.tf",
	}, readTree(t, dst, true))

	info, err := os.Stat(filepath.Join(dst, "modules/net/deep"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o750), info.Mode().Perm())
	b, err := os.ReadFile(filepath.Join(dst, "modules/abs.tf"))
	require.NoError(t, err)
	require.Equal(t, "# net\n", string(b))
}

func TestCopyTreeSourceIsSymlink(t *testing.T) {
	realDir := t.TempDir()
	writeFiles(t, realDir, 0o644, map[string]string{"main.tf": "# main\n"})
	require.NoError(t, os.Symlink("main.tf", filepath.Join(realDir, "alias.tf")))
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(realDir, link))

	dst := t.TempDir()
	require.NoError(t, CopyTree(t.Context(), link, dst))
	require.Equal(t, map[string]string{"main.tf": "-rw-r--r-- # main\n", "alias.tf": "-> main.tf"}, readTree(t, dst, true))
}

func TestCopyTreeErrors(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, 0o644, map[string]string{"secret": "x"})

	tests := []struct {
		name    string
		setup   func(t *testing.T, src string) (dst string)
		wantErr string
	}{
		{
			name: "relative symlink out",
			setup: func(t *testing.T, src string) string {
				require.NoError(t, os.Symlink("../../../../../../../../etc/passwd", filepath.Join(src, "modules/p")))
				return t.TempDir()
			},
			wantErr: "modules/p: symlink to ../../../../../../../../etc/passwd points outside the source directory",
		},
		{
			name: "absolute symlink out",
			setup: func(t *testing.T, src string) string {
				require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "secret.tf")))
				return t.TempDir()
			},
			wantErr: "secret.tf: symlink to " + filepath.Join(outside, "secret") + " points outside",
		},
		{
			name: "symlink to a directory out",
			setup: func(t *testing.T, src string) string {
				require.NoError(t, os.Symlink(outside, filepath.Join(src, "shared")))
				return t.TempDir()
			},
			wantErr: "shared: symlink to " + outside + " points outside",
		},
		{
			name: "symlink out through another symlink",
			setup: func(t *testing.T, src string) string {
				require.NoError(t, os.Symlink(outside, filepath.Join(src, "modules/z-out")))
				require.NoError(t, os.Symlink("modules/z-out/secret", filepath.Join(src, "a.tf")))
				return t.TempDir()
			},
			wantErr: "a.tf: symlink to modules/z-out/secret points outside",
		},
		{
			name: "dangling symlink out",
			setup: func(t *testing.T, src string) string {
				require.NoError(t, os.Symlink("/nonexistent/x", filepath.Join(src, "gone.tf")))
				return t.TempDir()
			},
			wantErr: "gone.tf: symlink to /nonexistent/x points outside",
		},
		{
			name:    "destination inside source",
			setup:   func(_ *testing.T, src string) string { return filepath.Join(src, "work") },
			wantErr: "is inside source",
		},
		{
			name:    "destination is source",
			setup:   func(_ *testing.T, src string) string { return src },
			wantErr: "is inside source",
		},
		{
			name: "destination not empty",
			setup: func(t *testing.T, _ string) string {
				dst := t.TempDir()
				writeFiles(t, dst, 0o644, map[string]string{"main.tf": "# old\n"})
				return dst
			},
			wantErr: "main.tf: open",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			writeFiles(t, src, 0o644, map[string]string{"main.tf": "# main\n", "modules/m/main.tf": "# m\n"})
			dst := tt.setup(t, src)
			err := CopyTree(t.Context(), src, dst)
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorContains(t, err, "copy tree: ")
		})
	}

	t.Run("source missing", func(t *testing.T) {
		require.ErrorContains(t, CopyTree(t.Context(), filepath.Join(outside, "nope"), t.TempDir()), "no such file or directory")
	})
	t.Run("source is a file", func(t *testing.T) {
		require.ErrorContains(t, CopyTree(t.Context(), filepath.Join(outside, "secret"), t.TempDir()), "is not a directory")
	})
}
