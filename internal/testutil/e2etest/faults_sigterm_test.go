//go:build faults

package e2etest

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// blockingWrapper stands in for the Terraform binary: it runs the real one
// (@REAL@), except for the subcommand named in @CTL@/block, where it
// marks @CTL@/blocked and waits until it is interrupted, as a slow
// Terraform step would. "verify" names the plan of the verification run
// (a plan after an apply of this test succeeded).
const blockingWrapper = `#!/bin/sh
ctl=@CTL@
sub=
for a in "$@"; do
  case "$a" in -*) ;; *) sub=$a; break ;; esac
done
if [ "$sub" = plan ] && [ -e "$ctl/applied" ]; then sub=verify; fi
if [ -n "$sub" ] && [ "$(cat "$ctl/block" 2>/dev/null)" = "$sub" ]; then
  : > "$ctl/blocked"
  trap 'exit 130' INT TERM
  while :; do sleep 0.1; done
fi
if [ "$sub" = apply ]; then
  @REAL@ "$@" || exit $?
  : > "$ctl/applied"
  exit 0
fi
exec @REAL@ "$@"
`

// blockingTerraform puts e's binary behind blockingWrapper, controlled
// from ctl (which must exist), and lets the jail reach the real binary.
func (e *tfEnv) blockingTerraform(t *testing.T, ctl string) {
	t.Helper()
	realBin, err := filepath.EvalSymlinks(e.bin)
	require.NoError(t, err)
	wrapper := filepath.Join(e.root, "bin", filepath.Base(e.bin))
	require.NoError(t, os.MkdirAll(filepath.Dir(wrapper), 0o755))
	script := strings.NewReplacer("@CTL@", ctl, "@REAL@", realBin).Replace(blockingWrapper)
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	e.bin = wrapper
	e.extraSandbox = append(e.extraSandbox, filepath.Dir(realBin))
}

// holdingProxy forwards to target, except that while held it keeps every
// request waiting (until released or the client gives up).
type holdingProxy struct {
	URL     string
	held    atomic.Bool
	waiting atomic.Int32
	release chan struct{}
}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	p := &holdingProxy{release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.held.Load() {
			p.waiting.Add(1)
			select {
			case <-p.release:
			case <-r.Context().Done():
				p.waiting.Add(-1)
				return
			}
			p.waiting.Add(-1)
		}
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { p.Release(); _ = srv.Close() })
	p.URL = "http://" + ln.Addr().String()
	return p
}

// Release lets held requests through and stops holding.
func (p *holdingProxy) Release() {
	if p.held.CompareAndSwap(true, false) {
		close(p.release)
	}
}

// TestFaultsSIGTERM: a SIGTERM in every phase of a run (source, init,
// plan, show, apply, verify, notify) stops the daemon gracefully: it exits
// 0 within a few seconds (Terraform gets terraform.kill_grace after
// SIGINT), leaves no process and no run directory behind, and keeps a
// correct record. A detection cut short stays "running" in the store and
// the next start records it errored ("daemon restarted") and runs the
// workspace again; a remediation cut short before its apply is recorded
// failed (never re-applied blindly), one cut short in its verification
// stays applied; a notification in flight is delivered once after the
// restart. In every case the drift is found, its incident opened once, and
// its "open" notification delivered exactly once.
//
// The phases alternate between the available binaries (Terraform,
// OpenTofu).
func TestFaultsSIGTERM(t *testing.T) {
	bins, cli := tftest.Tools(t)
	for i, phase := range []string{"source", "init", "plan", "show", "apply", "verify", "notify"} {
		bin := bins[i%len(bins)]
		t.Run(phase+"/"+filepath.Base(bin), func(t *testing.T) {
			// A run reads its plan from the plan file; show -json runs
			// where that cannot tell everything, as with fast paths off.
			sigtermIn(t, &tfEnv{bin: bin, cliConfig: cli, root: t.TempDir(), fastPathsOff: phase == "show"}, phase)
		})
	}
}

func sigtermIn(t *testing.T, e *tfEnv, phase string) {
	remediating := phase == "apply" || phase == "verify"
	for _, d := range []string{"out", "state", "ctl", "bin", "served"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	// The code, in a git repository served over HTTP behind a proxy that
	// can hold the fetch.
	repo := e.workspace(t, "repo", map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, "ws", "")})
	e.apply(t, repo)
	require.NoError(t, os.RemoveAll(filepath.Join(repo, ".terraform")))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".terraform*\n"), 0o644))
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "initial")
	git(t, e.root, "clone", "-q", "--bare", repo, filepath.Join(e.root, "served", "infra.git"))
	base, _ := gitServer(t, filepath.Join(e.root, "served"))
	gitProxy := newHoldingProxy(t, base)
	creds := filepath.Join(e.root, "git-token")
	require.NoError(t, os.WriteFile(creds, []byte(canaryGitToken+"\n"), 0o600))
	drifted := filepath.Join(e.root, "out", "ws.txt")
	require.NoError(t, os.WriteFile(drifted, []byte("hand edit"), 0o644))

	ctl := filepath.Join(e.root, "ctl")
	block := map[string]string{"init": "init", "plan": "plan", "show": "show", "apply": "apply", "verify": "verify"}[phase]
	if block != "" {
		require.NoError(t, os.WriteFile(filepath.Join(ctl, "block"), []byte(block), 0o644))
	}
	if phase == "source" {
		gitProxy.held.Store(true)
	}
	hook := notifytest.NewWebhookServer(t, "")
	if phase == "notify" {
		hook.FailNext(notifytest.Failure{Status: http.StatusServiceUnavailable, Delay: time.Minute})
	}
	caFile := filepath.Join(e.root, "hook-ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}), 0o644))

	mode := "off"
	if remediating {
		mode = "auto"
	}
	listen := freePort(t)
	e.blockingTerraform(t, ctl)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
defaults:
  schedule: "@hourly"
  backend_policy: { allow_local: true }
notifiers:
  - name: hook
    type: webhook
    webhook: { url_file: %s, secret_file: %s }
    ca_file: %s
alerts: { default_notifiers: [hook] }
workspaces:
  - name: ws
    source:
      git: { url: "%s/infra.git", ref: main, credentials_file: %s }
    remediation: { mode: %s }
`, listen, filepath.Join(e.root, "data", "dw.db"), hook.URLFile, hook.SecretFile, caFile, gitProxy.URL, creds, mode))

	d := startDaemon(t, cfg, listen)
	d.eventually("the run in phase "+phase, 90*time.Second, func() bool {
		switch phase {
		case "source":
			return gitProxy.waiting.Load() > 0
		case "notify":
			return hook.Attempts() > 0
		}
		_, err := os.Stat(filepath.Join(ctl, "blocked"))
		return err == nil
	})
	var inFlight, inFlightTrigger string
	if runs := d.runs("ws"); len(runs) > 0 && runs[0].Status == "running" {
		inFlight, inFlightTrigger = runs[0].ID, runs[0].Trigger
	}
	sent := time.Now()
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), "SIGTERM in %s: a graceful exit", phase)
	took := time.Since(sent)
	t.Logf("SIGTERM in %s: exited 0 after %s", phase, took.Round(time.Millisecond))
	require.Less(t, took, 10*time.Second, "the stop is bounded by terraform.kill_grace (2s), not by the step")
	require.Zero(t, tfProcesses(e.workDir()), "no Terraform left running")
	left, _ := filepath.Glob(filepath.Join(e.workDir(), "dw-*"))
	require.Empty(t, left, "no run directory left behind")
	require.NoError(t, os.RemoveAll(filepath.Join(ctl, "block")), "the fault is gone")

	// The restart: the fault is gone.
	gitProxy.Release()
	d = startDaemon(t, cfg, listen)
	wantStatus := "drift"
	if phase == "verify" {
		wantStatus = "clean"
	}
	d.eventually("ws settles as "+wantStatus+" and the outbox drains", 120*time.Second, func() bool {
		w, r := d.workspaces()["ws"], d.runs("ws")
		return w.Status == wantStatus && len(r) > 0 && r[0].Status != "running" && r[0].Status != "queued" &&
			d.metric(`driftwatch_notifications_pending{notifier="hook"}`) == 0
	})
	runs := d.runs("ws")
	if inFlight != "" {
		var found bool
		for _, r := range runs {
			if r.ID == inFlight {
				found = true
				if inFlightTrigger == "remediate" {
					// An apply's run ends with its outcome, before the exit.
					want := map[string]string{"apply": "failed", "verify": "applied"}[phase]
					require.Equal(t, want, r.Status, "the apply run cut short in %s", phase)
					continue
				}
				require.Equal(t, "errored", r.Status, "the run cut short in %s", phase)
				require.Contains(t, r.Error, "daemon restarted")
			}
		}
		require.True(t, found, "the interrupted run %s keeps its record", inFlight)
	}
	for _, r := range runs {
		require.NotEqual(t, "running", r.Status, "no run is left running: %+v", r)
		require.NotEqual(t, "queued", r.Status, "no run is left queued: %+v", r)
	}
	if remediating {
		rems := d.remediations("ws")
		require.NotEmpty(t, rems)
		last := rems[0]
		require.Len(t, rems, 1, "one remediation, not retried: %+v", rems)
		switch phase {
		case "apply":
			// Interrupted in the apply: failed, saying why, and never
			// applied blindly after the restart.
			require.Equal(t, "failed", last.State, "%+v", rems)
			require.Contains(t, last.Reason, "interrupted by the daemon's shutdown during the apply")
			require.Equal(t, "hand edit", mustRead(t, drifted))
		case "verify":
			// Applied; only its verification was cut short.
			require.Equal(t, "applied", last.State, "%+v", rems)
			require.Contains(t, last.Reason, "the verification plan was cut short")
			require.Equal(t, "v1", mustRead(t, drifted))
		}
		// The restart checks the workspace at once (not at its next slot):
		// the verification the stop cut short.
		var verified bool
		for _, r := range runs {
			verified = verified || (r.Trigger == "verify" && r.Status == wantStatus)
		}
		require.True(t, verified, "a verification run after the restart: %+v", runs)
		t.Logf("remediation after SIGTERM in %s: %s (%s)", phase, last.State, last.Reason)
	}

	// Exactly one delivery of each event of the incident, none duplicated.
	events := map[string]int{}
	for _, del := range hook.Deliveries() {
		require.True(t, del.Verified, del.Reason)
		require.False(t, del.Duplicate, "delivered twice: %s", del.Body)
		events[del.Payload.Event]++
	}
	require.Equal(t, 1, events["open"], "the incident's open notification, once: %v", events)
	wantResolve := 0
	if wantStatus == "clean" {
		wantResolve = 1
	}
	require.Equal(t, wantResolve, events["resolve"], "%v", events)
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
	assertNoCanary(t, "daemon log", d.logs.String())
}

// TestFaultsCancelApply: cancelling a remediation's apply run by API
// (POST /api/v1/runs/ID/cancel, the same as for a detection) while
// Terraform applies stops Terraform (SIGINT, then the kill after the
// grace) and records the remediation failed, "cancelled by request during
// the apply", with nothing left running; it is never re-applied, however
// many detections follow.
func TestFaultsCancelApply(t *testing.T) {
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	for _, d := range []string{"out", "state", "ctl", "bin"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	dir := e.workspace(t, "ws", map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, "ws", "")})
	e.apply(t, dir)
	drifted := filepath.Join(e.root, "out", "ws.txt")
	require.NoError(t, os.WriteFile(drifted, []byte("hand edit"), 0o644))
	ctl := filepath.Join(e.root, "ctl")
	e.blockingTerraform(t, ctl)
	require.NoError(t, os.WriteFile(filepath.Join(ctl, "block"), []byte("apply"), 0o644))
	token := "dw-cancel-apply-token-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
defaults:
  schedule: "@hourly"
  backend_policy: { allow_local: true }
workspaces:
  - name: ws
    source: { path: ./ws }
    remediation: { mode: auto }
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db")))

	d := startDaemon(t, cfg, listen)
	var applyRun string
	d.eventually("the apply blocked", 90*time.Second, func() bool {
		if _, err := os.Stat(filepath.Join(ctl, "blocked")); err != nil {
			return false
		}
		for _, r := range d.runs("ws") {
			if r.Trigger == "remediate" && r.Status == "running" {
				applyRun = r.ID
			}
		}
		return applyRun != ""
	})
	require.Equal(t, http.StatusAccepted, d.post("/api/v1/runs/"+applyRun+"/cancel", token))
	r := d.waitRemediation("ws", 30*time.Second, "failed", "applied", "refused", "verification_failed")
	require.Equal(t, "failed", r.State, "%+v", r)
	require.Contains(t, r.Reason, "cancelled by request during the apply")
	require.Equal(t, applyRun, r.ApplyRunID, "the cancelled run is the apply's")
	require.Equal(t, "hand edit", mustRead(t, drifted))
	d.eventually("nothing left running", 15*time.Second, func() bool { return tfProcesses(e.workDir()) == 0 })

	// Not re-applied: two more detections find the drift, and nothing
	// else happens.
	require.NoError(t, os.Remove(filepath.Join(ctl, "block")))
	for range 2 {
		id := triggerRun(t, d, "ws", token)
		d.eventually("detection "+id, 60*time.Second, func() bool {
			for _, x := range d.runs("ws") {
				if x.ID == id {
					return x.Status == "drift"
				}
			}
			return false
		})
	}
	require.Len(t, d.remediations("ws"), 1)
	require.Equal(t, "hand edit", mustRead(t, drifted))
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}
