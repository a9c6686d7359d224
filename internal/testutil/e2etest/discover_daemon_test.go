package e2etest

import (
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestDaemonDiscoveryGit: a daemon discovers the root modules of a git
// repository; the next commit adds one root and removes another (which
// has an open drift incident); on reload the new root is scheduled and
// checked, the removed one leaves the inventory and its incident resolves
// with the reason "workspace removed", its history kept.
func TestDaemonDiscoveryGit(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	for _, d := range []string{"out", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	root := func(name string) string {
		return providers + fmt.Sprintf(`
terraform {
  backend "local" { path = "@ROOT@/state/%[1]s.tfstate" }
}
resource "dwtest_file" "f" {
  filename = "@ROOT@/out/%[1]s.txt"
  content  = "v1"
}
`, name)
	}
	repo := filepath.Join(e.root, "repo")
	e.workspace(t, "repo", map[string]string{
		"envs/a/main.tf": root("a"), "envs/b/main.tf": root("b"), "envs/c/main.tf": root("c"),
		".gitignore": ".terraform/\n.terraform.lock.hcl\n",
	})
	for _, n := range []string{"a", "b", "c"} {
		e.apply(t, filepath.Join(repo, "envs", n))
	}
	// The first commit has a and b; c is committed later.
	c := filepath.Join(e.root, "c-main.tf")
	require.NoError(t, os.Rename(filepath.Join(repo, "envs/c/main.tf"), c))
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "a and b")
	served := filepath.Join(e.root, "served")
	require.NoError(t, os.MkdirAll(served, 0o755))
	git(t, served, "clone", "-q", "--bare", repo, filepath.Join(served, "live.git"))
	git(t, repo, "remote", "add", "origin", filepath.Join(served, "live.git"))
	base, _ := gitServer(t, served)
	creds := filepath.Join(e.root, "git-token")
	require.NoError(t, os.WriteFile(creds, []byte(canaryGitToken+"\n"), 0o600))

	hook := notifytest.NewWebhookServer(t, "")
	caFile := filepath.Join(e.root, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}), 0o644))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
allow_sub_minute_schedules: true
notifiers:
  - { name: hook, type: webhook, webhook: { url_file: %s, secret_file: %s }, ca_file: %s }
alerts: { default_notifiers: [hook] }
discover:
  - source:
      git: { url: "%s/live.git", ref: main, credentials_file: %s }
    include: ["envs/*"]
    defaults:
      schedule: "@every 2s"
      labels: { env: '{{index .Path 1}}' }
`, listen, filepath.Join(e.root, "data", "dw.db"), hook.URLFile, hook.SecretFile, caFile, base, creds))
	d := startDaemon(t, cfg, listen)
	names := func() []string {
		var out []string
		for n := range d.workspaces() {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	d.eventually("a and b discovered and clean", 90*time.Second, func() bool {
		ws := d.workspaces()
		return slices.Equal(names(), []string{"envs-a", "envs-b"}) && ws["envs-a"].Status == "clean" && ws["envs-b"].Status == "clean"
	})
	require.Equal(t, map[string]string{"env": "b"}, d.workspaces()["envs-b"].Labels, "labels from the path template")

	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "b.txt"), []byte("hand edit"), 0o644))
	d.eventually("b's drift incident opens", 60*time.Second, func() bool { return len(hook.Deliveries()) == 1 })
	require.Equal(t, "open", hook.Deliveries()[0].Payload.Event)
	require.Equal(t, "envs-b", hook.Deliveries()[0].Payload.Incident.Workspace)
	bRun := d.runs("envs-b")[0].ID

	// The next commit adds c and removes b.
	require.NoError(t, os.Rename(c, filepath.Join(repo, "envs/c/main.tf")))
	require.NoError(t, os.RemoveAll(filepath.Join(repo, "envs/b")))
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "c in, b out")
	git(t, repo, "push", "-q", "origin", "main")
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP)) // reload: discover again

	d.eventually("c scheduled and checked, b retired", 90*time.Second, func() bool {
		ws := d.workspaces()
		return slices.Equal(names(), []string{"envs-a", "envs-c"}) && ws["envs-c"].Status == "clean"
	})
	d.eventually("b's incident resolved", 60*time.Second, func() bool { return len(hook.Deliveries()) == 2 })
	res := hook.Deliveries()[1].Payload
	require.Equal(t, "resolve", res.Event)
	require.Equal(t, "envs-b", res.Incident.Workspace)
	require.Equal(t, "workspace removed", res.Incident.Reason)
	require.Equal(t, "dwtest_file.f", res.Incident.Findings[0].Address, "the resolve lists what resolved")
	var kept apiRun
	d.getJSON("/api/v1/runs/"+bRun, &kept) // history kept: the retired workspace's runs are still there
	require.Equal(t, bRun, kept.ID)
	require.NotContains(t, d.logs.String(), canaryGitToken)
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}
