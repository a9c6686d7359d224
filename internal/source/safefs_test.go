package source

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mkfifo makes a named pipe at path. Should a read block on it after all,
// the cleanup opens it for writing, which releases the reader.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// promptly runs fn and fails the test if it has not returned within a
// generous guard: every call here must return at once, and one blocked on
// a named pipe would otherwise hang the test binary.
func promptly[T any](t *testing.T, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("blocked: did not return within 20s")
		panic("unreachable")
	}
}

type readResult struct {
	b   []byte
	err error
}

// read calls ReadFile under promptly.
func read(t *testing.T, ctx context.Context, root, name string, limit int64) ([]byte, error) {
	t.Helper()
	r := promptly(t, func() readResult {
		b, err := ReadFile(ctx, root, name, limit)
		return readResult{b, err}
	})
	return r.b, r.err
}

// readErr calls ReadFile under promptly and returns its error.
func readErr(t *testing.T, ctx context.Context, root, name string, limit int64) error {
	t.Helper()
	_, err := read(t, ctx, root, name, limit)
	return err
}

func TestReadFile(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, 0o644, map[string]string{"secret": "outside"})
	root := t.TempDir()
	writeFiles(t, root, 0o644, map[string]string{
		"main.tf":             "# main\n",
		"modules/net/main.tf": "# net\n",
		"empty.tf":            "",
	})
	link := func(target, name string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	link("../../main.tf", "modules/net/root.tf")
	link("modules/net", "net")
	link(filepath.Join(root, "main.tf"), "abs.tf")
	link("/dev/zero", "zero.tf")
	link(filepath.Join(outside, "secret"), "secret.tf")
	link("../../../../../../../../../../etc/passwd", "passwd.tf")
	link(outside, "shared")
	link("missing.tf", "dangling.tf")
	link("modules", "modules.tf")
	mkfifo(t, filepath.Join(root, "pipe.tf"))
	mkfifo(t, filepath.Join(outside, "pipe"))
	link("pipe.tf", "to-pipe.tf")
	link(filepath.Join(outside, "pipe"), "to-outside-pipe.tf")

	t.Run("allowed", func(t *testing.T) {
		for name, want := range map[string]string{
			"main.tf":             "# main\n",
			"empty.tf":            "",
			"modules/net/main.tf": "# net\n",
			"modules/net/root.tf": "# main\n", // a symlink inside the tree
			"net/main.tf":         "# net\n",  // through a symlinked directory inside the tree
			"abs.tf":              "# main\n", // an absolute link that stays inside
		} {
			for _, n := range []string{name, filepath.Join(root, name)} {
				b, err := read(t, t.Context(), root, n, MaxConfigFileSize)
				require.NoError(t, err)
				require.Equal(t, want, string(b), n)
			}
		}
	})

	tests := []struct {
		name    string
		wantIs  error
		wantErr string
	}{
		{name: "pipe.tf", wantIs: ErrNotRegular, wantErr: "read pipe.tf: not a regular file (named pipe)"},
		{name: "to-pipe.tf", wantIs: ErrNotRegular, wantErr: "read to-pipe.tf: not a regular file (named pipe)"},
		{name: "to-outside-pipe.tf", wantIs: ErrEscapes, wantErr: "read to-outside-pipe.tf: symlink to " + filepath.Join(outside, "pipe") + " points outside the source directory"},
		{name: "zero.tf", wantIs: ErrEscapes, wantErr: "read zero.tf: symlink to /dev/zero points outside the source directory"},
		{name: "secret.tf", wantIs: ErrEscapes, wantErr: "read secret.tf: symlink to " + filepath.Join(outside, "secret") + " points outside"},
		{name: "passwd.tf", wantIs: ErrEscapes, wantErr: "read passwd.tf: symlink to ../../../../../../../../../../etc/passwd points outside"},
		{name: "shared/secret", wantIs: ErrEscapes, wantErr: "read shared/secret: resolves outside the source directory"},
		{name: "../x.tf", wantIs: ErrEscapes, wantErr: "read ../x.tf: is outside the source directory"},
		{name: filepath.Join(outside, "secret"), wantIs: ErrEscapes, wantErr: "is outside the source directory"},
		{name: "modules", wantIs: ErrNotRegular, wantErr: "read modules: not a regular file (directory)"},
		{name: "modules.tf", wantIs: ErrNotRegular, wantErr: "read modules.tf: not a regular file (directory)"},
		{name: "dangling.tf", wantIs: fs.ErrNotExist, wantErr: "read dangling.tf: no such file or directory"},
		{name: "missing.tf", wantIs: fs.ErrNotExist, wantErr: "read missing.tf: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := readErr(t, t.Context(), root, tt.name, MaxConfigFileSize)
			require.ErrorIs(t, err, tt.wantIs)
			require.ErrorContains(t, err, tt.wantErr)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.name, pe.Path)
		})
	}

	t.Run("devices are refused, even unconfined", func(t *testing.T) {
		// root "/" is how an operator's own file (an absolute var file) is
		// read: no containment, every other check.
		for _, root := range []string{"/", "/dev"} {
			err := readErr(t, t.Context(), root, "/dev/zero", MaxConfigFileSize)
			require.ErrorIs(t, err, ErrNotRegular)
			require.ErrorContains(t, err, "read /dev/zero: not a regular file (character device)")
		}
		err := readErr(t, t.Context(), "/", filepath.Join(root, "zero.tf"), MaxConfigFileSize)
		require.ErrorIs(t, err, ErrNotRegular)
	})

	t.Run("size cap", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, 0o644, map[string]string{"big.tf": strings.Repeat("#", 1025), "cap.tf": strings.Repeat("#", 1024)})
		err := readErr(t, t.Context(), dir, "big.tf", 1024)
		require.ErrorIs(t, err, ErrTooLarge)
		require.ErrorContains(t, err, "read big.tf: file too large: over the limit of 1024 bytes")
		b, err := read(t, t.Context(), dir, "cap.tf", 1024)
		require.NoError(t, err)
		require.Len(t, b, 1024)

		big := filepath.Join(dir, "huge.tf")
		f, err := os.Create(big)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(MaxConfigFileSize+1)) // sparse: no disk used
		require.NoError(t, f.Close())
		require.ErrorIs(t, readErr(t, t.Context(), dir, big, MaxConfigFileSize), ErrTooLarge)
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := readErr(t, ctx, root, "main.tf", MaxConfigFileSize)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorContains(t, err, "read main.tf: ")
	})
}

// TestOpenBeneathRefusesSwappedInPipe covers the race ReadFile's checks
// cannot: a regular file replaced by a named pipe after it was looked at.
// The open itself must not block, and fstat refuses what it opened.
func TestOpenBeneathRefusesSwappedInPipe(t *testing.T) {
	root := t.TempDir()
	mkfifo(t, filepath.Join(root, "evil.tf"))
	err := promptly(t, func() error {
		f, _, err := openBeneath(root, "evil.tf", MaxConfigFileSize)
		if f != nil {
			f.Close()
		}
		return err
	})
	require.ErrorIs(t, err, ErrNotRegular)
	require.ErrorContains(t, err, "named pipe")

	// A link swapped in is followed only inside root.
	outside := t.TempDir()
	writeFiles(t, outside, 0o644, map[string]string{"secret": "x"})
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "abs.tf")))
	require.NoError(t, os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(root, "rel.tf")))
	for _, name := range []string{"abs.tf", "rel.tf"} {
		_, _, err := openBeneath(root, name, MaxConfigFileSize)
		require.Error(t, err, name)
	}

	// The copy of a local source opens the same way.
	err = promptly(t, func() error {
		return copyFile(t.Context(), filepath.Join(root, "evil.tf"), filepath.Join(t.TempDir(), "copy"), 0o644)
	})
	require.ErrorIs(t, err, ErrNotRegular)
}

// TestCopyTreeStopsWhenCancelled: the copy of a local source runs under
// the run's context too.
func TestCopyTreeStopsWhenCancelled(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, 0o644, map[string]string{"main.tf": "#", "m/a.tf": "#"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dst := filepath.Join(t.TempDir(), "copy")
	err := CopyTree(ctx, src, dst)
	require.ErrorIs(t, err, context.Canceled)
	entries, err := os.ReadDir(dst)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.NoError(t, CopyTree(t.Context(), src, dst))
}
