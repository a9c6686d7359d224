package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServer(t *testing.T) {
	s := NewServer(t, "canary-token")
	url, commit := s.Publish(t, "acme/infra.git", map[string]string{"envs/prod/main.tf": "# prod\n"})
	require.Equal(t, s.URL+"/acme/infra.git", url)
	require.Len(t, commit, 40)

	// Without the token: refused.
	dir := t.TempDir()
	cmd := exec.Command("git", "-c", "credential.helper=", "clone", "--quiet", url, filepath.Join(dir, "anon"))
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)

	// With it: the published tree; and a push is taken.
	authed := "http://x:canary-token@" + s.Listener.Addr().String() + "/acme/infra.git"
	Run(t, dir, "clone", "--quiet", authed, "work")
	work := filepath.Join(dir, "work")
	require.Equal(t, commit, Run(t, work, "rev-parse", "HEAD"))
	require.Equal(t, "# prod", Run(t, work, "show", "HEAD:envs/prod/main.tf"))
	Run(t, work, "commit", "--quiet", "--allow-empty", "-m", "second")
	Run(t, work, "push", "--quiet", "origin", "main:pushed")
	require.Equal(t, Run(t, work, "rev-parse", "HEAD"), Run(t, s.Bare("acme/infra.git"), "rev-parse", "pushed"))
	require.NotEmpty(t, s.URLs())
}
