package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

// The daemon's process is non-dumpable after SetNonDumpable (checked in a
// child process: the flag is the process's own).
func TestSetNonDumpable(t *testing.T) {
	if os.Getenv("DW_TEST_NONDUMPABLE") == "1" {
		require.NoError(t, SetNonDumpable())
		v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		require.NoError(t, err)
		if v != 0 {
			os.Exit(3)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSetNonDumpable$")
	cmd.Env = append(os.Environ(), "DW_TEST_NONDUMPABLE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// Without a jail the runner executes the binary itself; with one, the
// launcher, whose spec binds the run directory last and never the
// launcher's own directory, and makes the plugin cache writable only on
// request.
func TestJailSpec(t *testing.T) {
	base := t.TempDir()
	run := filepath.Join(base, "dw-1")
	require.NoError(t, os.Mkdir(run, 0o700))
	bin := filepath.Join(t.TempDir(), "terraform")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	cache := t.TempDir()

	j, err := NewJail(terraform.Request{}, run, bin)
	require.NoError(t, err)
	require.Equal(t, bin, j.Exe())
	require.False(t, j.Active())

	j, err = NewJail(terraform.Request{Jail: "/usr/bin/bwrap", PluginCacheDir: cache, VarFiles: []string{"/etc/x.tfvars", "rel.tfvars"}}, run, bin)
	require.NoError(t, err)
	require.True(t, j.Active())
	require.Equal(t, JailExecName, filepath.Base(j.Exe()))
	require.False(t, strings.HasPrefix(j.Exe(), run+"/"), "the launcher is outside the jail")
	spec := func() string {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(j.Exe()), "spec.json"))
		require.NoError(t, err)
		return string(b)
	}
	s := spec()
	require.Contains(t, s, `"--ro-bind","`+bin+`","`+bin+`"`)
	require.Contains(t, s, `"--ro-bind-try","/etc/x.tfvars","/etc/x.tfvars"`)
	require.NotContains(t, s, "rel.tfvars")
	require.Contains(t, s, `"--ro-bind-try","`+cache+`","`+cache+`"`)
	require.Contains(t, s, `"--bind","`+run+`","`+run+`"`)
	require.NotContains(t, s, filepath.Dir(j.Exe()))
	require.NoError(t, j.CacheWritable(true))
	require.Contains(t, spec(), `"--bind-try","`+cache+`","`+cache+`"`)
	require.NoError(t, j.CacheWritable(false))
	require.NotContains(t, spec(), `"--bind-try"`)
	j.Close()
	_, err = os.Stat(filepath.Dir(j.Exe()))
	require.True(t, os.IsNotExist(err))
}
