package engine

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// These tests run real Terraform (and OpenTofu, where built) with the
// offline test provider driftwatch/dwtest, whose files edited by hand are
// real drift, and hashicorp/local. `make test` provisions them and sets
// DRIFTWATCH_TF_BINARIES / DRIFTWATCH_TF_CLI_CONFIG; a plain `go test`
// skips, and DRIFTWATCH_E2E=1 without them fails.

const providers = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
    local  = { source = "hashicorp/local" }
  }
  backend "local" { path = "@ROOT@/state/@NAME@.tfstate" }
}
`

// providersLocalState keeps the state in the workspace directory, as a
// plain `terraform apply` of code without a backend block does.
const providersLocalState = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
`

// forEachTool runs fn as a parallel subtest per binary (terraform, tofu).
func forEachTool(t *testing.T, fn func(t *testing.T, e *tfEnv)) {
	bins, cli := tftest.Tools(t)
	for _, b := range bins {
		t.Run(filepath.Base(b), func(t *testing.T) {
			t.Parallel()
			// A short root: providers' unix sockets live under the
			// runners' sandboxes, and t.TempDir() names are long.
			root, err := os.MkdirTemp("", "dwremediate")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			fn(t, &tfEnv{bin: b, cliConfig: cli, root: root})
		})
	}
}

type tfEnv struct {
	bin, cliConfig, root string
}

func (e *tfEnv) out(name string) string { return filepath.Join(e.root, "out", name) }

// workspace writes main.tf ("@ROOT@" and "@NAME@" replaced) into root/name.
func (e *tfEnv) workspace(t *testing.T, name, mainTF string) string {
	t.Helper()
	dir := filepath.Join(e.root, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	body := strings.NewReplacer("@ROOT@", e.root, "@NAME@", name).Replace(mainTF)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(body), 0o644))
	return dir
}

func (e *tfEnv) tf(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.root, "TF_CLI_CONFIG_FILE=" + e.cliConfig,
		"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v in %s:\n%s", e.bin, args, dir, out)
}

func (e *tfEnv) apply(t *testing.T, dir string) {
	t.Helper()
	e.tf(t, dir, "init", "-input=false", "-no-color")
	e.tf(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
}

func (e *tfEnv) request(dir string) terraform.Request {
	return terraform.Request{
		RunID: "r1", Workspace: filepath.Base(dir), Binary: e.bin, Source: terraform.Source{Path: dir},
		CLIConfigFile: e.cliConfig, PluginCacheDir: filepath.Join(e.root, "plugin-cache"),
		WorkDir: filepath.Join(e.root, "runs"), Timeout: 3 * time.Minute, KillGrace: 2 * time.Second,
	}
}

// detect runs the real detection path (local runner, policy, envelope)
// and returns what an approver would approve.
func (e *tfEnv) detect(t *testing.T, req terraform.Request, rules policy.Rules, env Envelope) (ChangeSet, []Refusal) {
	t.Helper()
	res, err := local.New(testLogger()).Run(t.Context(), req)
	require.NoError(t, err)
	return Evaluate(env, policy.Classify(res.Plan, rules), res.Plan)
}

// approve detects and requires the envelope to pass.
func (e *tfEnv) approve(t *testing.T, req terraform.Request, env Envelope) ChangeSet {
	t.Helper()
	cs, refusals := e.detect(t, req, policy.Rules{}, env)
	require.Empty(t, refusals)
	return cs
}

// editedByHand is the common case: a workspace named name whose one file,
// out/a.txt ("v1"), was applied, then edited by hand; its request and the
// approved change set reverting the edit.
func (e *tfEnv) editedByHand(t *testing.T, name string) (dir string, req terraform.Request, approved ChangeSet) {
	t.Helper()
	dir = e.workspace(t, name, providers+`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
`)
	e.apply(t, dir)
	write(t, e.out("a.txt"), "edited by hand")
	req = e.request(dir)
	return dir, req, e.approve(t, req, Envelope{})
}

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)) }

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func codes(rs []Refusal) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

func phaseNames(ps []drift.Phase) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// markedProcs lists processes that carry a run marker (any: the test runs
// one remediation at a time) and run from under dir.
func markedProcs(t *testing.T, dir string) []string {
	t.Helper()
	needle := []byte(sandbox.MarkerEnv + "=")
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && bytes.Contains(b, needle) && strings.HasPrefix(cwd, dir) {
			out = append(out, e.Name())
		}
	}
	return out
}

// requireNoSandboxLeft checks that the remediation's temp dir is gone.
func requireNoSandboxLeft(t *testing.T, req terraform.Request) {
	t.Helper()
	entries, _ := os.ReadDir(req.WorkDir)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), sandbox.ApplyDirPrefix), "sandbox left behind: %s", e.Name())
	}
}

func TestApplyRevertsDrift(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "revert", providers+`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
resource "dwtest_file" "untouched" {
  filename = "@ROOT@/out/untouched.txt"
  content  = "same"
}
`)
		e.apply(t, dir)
		write(t, e.out("a.txt"), "edited by hand")
		req := e.request(dir)
		approved := e.approve(t, req, Envelope{})
		require.Equal(t, []Entry{{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}}}, approved.Entries)

		a := &Applier{Logger: testLogger()}
		runLog := runlog.New(1<<20, nil)
		req.Log = runLog
		out, err := a.Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultApplied, out.Result, out.Reason)
		require.Empty(t, out.Reason)
		require.True(t, out.ApplyStarted)
		// The apply run's log reads like a detection's: init, the plan
		// and what it changes, then the apply's progress, with addresses
		// and never a value.
		log := string(runLog.Bytes())
		for _, want := range []string{"== init ==", "== plan ==", "drift  ~   update  dwtest_file.a (changed outside Terraform)",
			"== changes ==", "== apply ==", "apply    dwtest_file.a: updating", "apply    dwtest_file.a: updated after "} {
			require.Contains(t, log, want)
		}
		require.Less(t, strings.Index(log, "== apply =="), strings.Index(log, "apply    dwtest_file.a: updated after "))
		require.NotContains(t, log, "edited by hand", "no value reaches the log")
		require.Equal(t, approved.Hash(), out.Before.Hash())
		require.Empty(t, out.Residual)
		require.Regexp(t, `^(terraform|tofu) \d+\.\d+\.\d+`, out.Tool)
		require.Equal(t, []string{"source", "init", "plan", "show", "apply", "verify"}, phaseNames(out.Phases))

		require.Equal(t, "v1", read(t, e.out("a.txt")), "the drift is reverted")
		require.Equal(t, "same", read(t, e.out("untouched.txt")))
		_, refusals := e.detect(t, req, policy.Rules{}, Envelope{})
		require.Equal(t, []string{CodeNoDrift}, codes(refusals), "an independent detection run sees no drift")

		requireNoSandboxLeft(t, req)
		require.Empty(t, markedProcs(t, req.WorkDir), "no process of the remediation outlives it")
	})
}

func TestApplyRecreatesDeletedWhenAllowed(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "recreate", providers+`
resource "local_file" "gone" {
  filename = "@ROOT@/out/gone.txt"
  content  = "bye"
}
`)
		e.apply(t, dir)
		require.NoError(t, os.Remove(e.out("gone.txt")))
		req := e.request(dir)

		_, refusals := e.detect(t, req, policy.Rules{}, Envelope{})
		require.Equal(t, []string{CodeActionNotAllowed}, codes(refusals), "create is off by default")

		env := Envelope{AllowActions: []string{ActionUpdate, ActionCreate}}
		approved := e.approve(t, req, env)
		out, err := (&Applier{Logger: testLogger(), Envelope: env}).Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultApplied, out.Result, out.Reason)
		require.Equal(t, "bye", read(t, e.out("gone.txt")))

		// With the default envelope, Apply refuses the same change on its own.
		require.NoError(t, os.Remove(e.out("gone.txt")))
		out, err = (&Applier{Logger: testLogger()}).Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultRefused, out.Result)
		require.Equal(t, []string{CodeActionNotAllowed}, codes(out.Refusals))
		require.NoFileExists(t, e.out("gone.txt"))
	})
}

// TestApplyRefusesChangedPlan changes things between approval and apply:
// nothing may be applied.
func TestApplyRefusesChangedPlan(t *testing.T) {
	const twoFiles = providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/@NAME@-a.txt"
  content  = "v1"
}
resource "dwtest_file" "b" {
  filename = "@ROOT@/out/@NAME@-b.txt"
  content  = "v1"
}
`
	cases := []struct {
		name string
		ws   string // workspace (and file name prefix)
		// change runs after approval.
		change  func(t *testing.T, e *tfEnv)
		refused []string
		// keepsEdit: the hand-edited file must still hold the edit.
		keepsEdit bool
		reasonHas string
	}{
		{
			name: "another resource drifted", ws: "more", keepsEdit: true,
			reasonHas: "the plan changed since approval (new: dwtest_file.b: update [content])",
			change:    func(t *testing.T, e *tfEnv) { write(t, e.out("more-b.txt"), "edited too") },
			refused:   []string{CodePlanChanged},
		},
		{
			name: "the drifted resource was deleted", ws: "deleted",
			change:  func(t *testing.T, e *tfEnv) { require.NoError(t, os.Remove(e.out("deleted-a.txt"))) },
			refused: []string{CodePlanChanged, CodeActionNotAllowed},
		},
		{
			name: "config changed the drifted attribute", ws: "config", keepsEdit: true,
			change: func(t *testing.T, e *tfEnv) {
				// Same address, action and path: only the values tell.
				e.workspace(t, "config", strings.Replace(twoFiles, `content  = "v1"`, `content  = "v2"`, 1))
			},
			refused:   []string{CodeNotARevert},
			reasonHas: "dwtest_file.a: the apply would set content to a value other than the last applied one",
		},
		{
			name: "new configuration merged", ws: "merged", keepsEdit: true,
			change: func(t *testing.T, e *tfEnv) {
				e.workspace(t, "merged", twoFiles+`
resource "dwtest_file" "c" {
  filename = "@ROOT@/out/merged-c.txt"
  content  = "new"
}
`)
			},
			refused: []string{CodePlanChanged, CodePending},
		},
		{
			name: "drift fixed by hand", ws: "fixed",
			change:  func(t *testing.T, e *tfEnv) { write(t, e.out("fixed-a.txt"), "v1") },
			refused: []string{CodePlanChanged, CodeNoDrift},
		},
	}
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				dir := e.workspace(t, tc.ws, twoFiles)
				e.apply(t, dir)
				write(t, e.out(tc.ws+"-a.txt"), "edited by hand")
				req := e.request(dir)
				approved := e.approve(t, req, Envelope{})

				tc.change(t, e)
				out, err := (&Applier{Logger: testLogger()}).Apply(t.Context(), req, approved)
				require.NoError(t, err)
				require.Equal(t, ResultRefused, out.Result)
				require.Equal(t, tc.refused, codes(out.Refusals), "refusals: %v", out.Refusals)
				require.False(t, out.ApplyStarted)
				require.NotContains(t, out.Reason, "\n")
				require.Contains(t, out.Reason, tc.reasonHas)
				if tc.keepsEdit {
					require.Equal(t, "edited by hand", read(t, e.out(tc.ws+"-a.txt")), "nothing applied")
				}
				require.NoFileExists(t, e.out("merged-c.txt"))
				requireNoSandboxLeft(t, req)
			})
		}
	})
}

// TestApplyFailsMidway: one change applies, the other fails in the
// provider; the outcome is failed with Terraform's one-line diagnostic, and
// the drift that remains is still detected (the incident stays open).
func TestApplyFailsMidway(t *testing.T) {
	const canary = "CANARY-secret-env-7d41"
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "midway", providers+`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
resource "dwtest_file" "b" {
  filename = "@ROOT@/out/sub-`+canary+`/b.txt"
  content  = "v1"
}
`)
		e.apply(t, dir)
		secretFile := filepath.Join(e.root, "token")
		write(t, secretFile, canary+"\n")

		write(t, e.out("a.txt"), "edited by hand")
		// b's directory becomes a dangling symlink: the refresh finds the
		// file gone (drift: deleted), and the provider's mkdir fails at
		// apply time, even for root.
		sub := e.out("sub-" + canary)
		require.NoError(t, os.RemoveAll(sub))
		require.NoError(t, os.Symlink(filepath.Join(e.root, "nowhere"), sub))

		req := e.request(dir)
		req.SecretEnvFiles = map[string]string{"APP_TOKEN": secretFile}
		env := Envelope{AllowActions: []string{ActionUpdate, ActionCreate}}
		approved := e.approve(t, req, env)
		require.Equal(t, 2, approved.Len())

		out, err := (&Applier{Logger: testLogger(), Envelope: env}).Apply(t.Context(), req, approved)
		require.Error(t, err)
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "apply", re.Phase)
		require.Equal(t, ResultFailed, out.Result)
		require.True(t, out.ApplyStarted)
		require.Equal(t, "apply: Error: Cannot write file (dwtest_file.b, main.tf line 13)", out.Reason)
		require.Equal(t, out.Reason, err.Error())
		require.NotContains(t, out.Reason+err.Error()+re.Err.Error(), canary)

		require.Equal(t, "v1", read(t, e.out("a.txt")), "the part before the failure was applied")
		// The failed apply still persisted the refreshed state, in which b
		// no longer exists: detection now sees a planned create with no
		// drift behind it (pending), not drift. So the drift incident must
		// be kept open from this failed outcome, not from re-detection.
		res, err := local.New(testLogger()).Run(t.Context(), req)
		require.NoError(t, err)
		findings := policy.Classify(res.Plan, policy.Rules{})
		require.Equal(t, drift.StatusPending, drift.StatusOf(findings))
		require.Equal(t, []drift.Finding{{Kind: drift.KindPending, Address: "dwtest_file.b", Type: "dwtest_file", Action: "create", Attributes: []string{}}}, findings)
		requireNoSandboxLeft(t, req)
	})
}

func TestApplyVerificationFails(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		_, req, approved := e.editedByHand(t, "verify")

		a := &Applier{Logger: testLogger()}
		// Someone edits the file again right after the apply.
		a.afterApply = func() { write(t, e.out("a.txt"), "edited again") }
		out, err := a.Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultVerificationFailed, out.Result)
		require.True(t, out.ApplyStarted)
		require.Equal(t, "still not converged after apply: dwtest_file.a (drift update)", out.Reason)
		require.Len(t, out.Residual, 1)
		require.Equal(t, []string{"content"}, out.Residual[0].Attributes)
	})
}

func TestApplyRefusesStateInSandbox(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir := e.workspace(t, "localstate", providersLocalState+`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
`)
		e.apply(t, dir)
		write(t, e.out("a.txt"), "edited by hand")
		req := e.request(dir)
		approved := e.approve(t, req, Envelope{})

		out, err := (&Applier{Logger: testLogger()}).Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultRefused, out.Result)
		require.Equal(t, []string{CodeStateInSandbox}, codes(out.Refusals))
		require.Equal(t, "edited by hand", read(t, e.out("a.txt")))
	})
}

// TestApplyTakesTheStateLock holds the local backend's lock (an fcntl lock
// on the state file, as Terraform takes it): the remediation must not
// plan around it.
func TestApplyTakesTheStateLock(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		_, req, approved := e.editedByHand(t, "locked")

		f, err := os.OpenFile(filepath.Join(e.root, "state", "locked.tfstate"), os.O_RDWR, 0)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}))

		out, err := (&Applier{Logger: testLogger()}).Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultRefused, out.Result, out.Reason)
		require.Equal(t, []string{CodeStateLocked}, codes(out.Refusals))
		require.Equal(t, "edited by hand", read(t, e.out("a.txt")))

		require.NoError(t, syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0}))
		out, err = (&Applier{Logger: testLogger()}).Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultApplied, out.Result, out.Reason)
	})
}

// TestApplyWaitsForAnUnreadableLock holds the local backend's lock with
// no info file beside it, as another program would: Terraform cannot read
// the holder and gives up at once whatever -lock-timeout says (OpenTofu's
// S3 lock file does the same when the lock goes away between its attempt
// and its read). The remediation asks again while LockTimeout lasts, and
// applies once the lock is released.
func TestApplyWaitsForAnUnreadableLock(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		_, req, approved := e.editedByHand(t, "unreadable")

		f, err := os.OpenFile(filepath.Join(e.root, "state", "unreadable.tfstate"), os.O_RDWR, 0)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}))
		asked := &signalWriter{word: "asking again", seen: make(chan struct{})}
		released := make(chan struct{})
		go func() {
			defer close(released)
			<-asked.seen
			_ = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0})
		}()

		out, err := (&Applier{Logger: slog.New(slog.NewTextHandler(asked, nil)), LockTimeout: time.Minute}).Apply(t.Context(), req, approved)
		select {
		case <-released:
		default:
			t.Fatalf("the remediation never asked again for the lock: %s", out.Reason)
		}
		require.NoError(t, err)
		require.Equal(t, ResultApplied, out.Result, out.Reason)
		require.Equal(t, "v1", read(t, e.out("a.txt")))
	})
}

// signalWriter closes seen the first time a log line holds word.
type signalWriter struct {
	word string
	once sync.Once
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(w.word)) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// TestApplyKillSwitchBeforeApply flips the kill switch while the
// remediation plans: the apply must not start.
func TestApplyKillSwitchBeforeApply(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		_, req, approved := e.editedByHand(t, "paused")

		calls := 0
		a := &Applier{Logger: testLogger(), Paused: func() bool { calls++; return calls > 1 }}
		out, err := a.Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultRefused, out.Result)
		require.Equal(t, []string{CodePaused}, codes(out.Refusals))
		require.False(t, out.ApplyStarted)
		require.Equal(t, 2, calls)
		require.Equal(t, "edited by hand", read(t, e.out("a.txt")))

		// A Job's pod asks the daemon instead (Proceed), right before the
		// apply: its refusal is the outcome, and nothing is applied.
		asked := 0
		deny := Refusal{Code: CodeDaemonUnreachable, Reason: "no answer"}
		a = &Applier{Logger: testLogger(), Proceed: func(context.Context) *Refusal { asked++; return &deny }}
		out, err = a.Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultRefused, out.Result)
		require.Equal(t, []Refusal{deny}, out.Refusals)
		require.Equal(t, "no answer", out.Reason)
		require.False(t, out.ApplyStarted)
		require.Equal(t, approved.Hash(), out.Before.Hash(), "asked after the fresh plan matched the approval")
		require.Equal(t, 1, asked)
		require.Equal(t, "edited by hand", read(t, e.out("a.txt")))

		a.Proceed = func(context.Context) *Refusal { asked++; return nil }
		out, err = a.Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultApplied, out.Result, out.Reason)
		require.Equal(t, 2, asked)
		require.Equal(t, "v1", read(t, e.out("a.txt")))
	})
}

// TestApplyRefusesStalePlan: another apply lands between the remediation's
// plan and its apply. Terraform rejects the saved plan; nothing is applied.
func TestApplyRefusesStalePlan(t *testing.T) {
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		dir, req, approved := e.editedByHand(t, "stale")

		a := &Applier{Logger: testLogger()}
		a.beforeApply = func() { e.tf(t, dir, "apply", "-refresh-only", "-auto-approve", "-input=false", "-no-color") }
		out, err := a.Apply(t.Context(), req, approved)
		require.NoError(t, err)
		require.Equal(t, ResultRefused, out.Result, out.Reason)
		require.Equal(t, []string{CodePlanChanged}, codes(out.Refusals))
		require.Contains(t, out.Reason, "saved plan is stale")
		require.False(t, out.ApplyStarted)
		require.Equal(t, "edited by hand", read(t, e.out("a.txt")))
	})
}

// TestApplyTimeout: a remediation past its timeout fails as timed out,
// whatever Terraform printed.
func TestApplyTimeout(t *testing.T) {
	cs := ChangeSet{Entries: []Entry{{Address: "dwtest_file.a", Action: "update"}}}
	src := t.TempDir()
	write(t, filepath.Join(src, "main.tf"), "")
	req := terraform.Request{Workspace: "ws", Binary: "/bin/true", Source: terraform.Source{Path: src}, WorkDir: t.TempDir(), Timeout: time.Nanosecond}
	out, err := (&Applier{}).Apply(t.Context(), req, cs)
	require.ErrorIs(t, err, terraform.ErrTimeout)
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "source", re.Phase, "the copy of the source stops at the timeout too")
	require.Equal(t, ResultFailed, out.Result)
	require.Equal(t, "source: run timed out after 1ns", out.Reason)
	requireNoSandboxLeft(t, req)
}

// TestApplyRefusesWithoutRunning needs no Terraform: these refusals come
// before any sandbox exists.
func TestApplyRefusesWithoutRunning(t *testing.T) {
	cs := ChangeSet{Entries: []Entry{{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}}}}
	cases := []struct {
		name     string
		applier  *Applier
		approved ChangeSet
		code     string
	}{
		{name: "nothing approved", applier: &Applier{}, code: CodeNothingApproved},
		{name: "paused", applier: &Applier{Paused: func() bool { return true }}, approved: cs, code: CodePaused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "runs")
			req := terraform.Request{Workspace: "ws", Binary: "/nonexistent/terraform", Source: terraform.Source{Path: t.TempDir()}, WorkDir: work}
			out, err := tc.applier.Apply(t.Context(), req, tc.approved)
			require.NoError(t, err)
			require.Equal(t, ResultRefused, out.Result)
			require.Equal(t, []string{tc.code}, codes(out.Refusals))
			require.NoDirExists(t, work)
		})
	}
}

// TestApplySetupFailure: a failure before Terraform runs is a failed
// outcome with its phase, never a panic or an applied one.
func TestApplySetupFailure(t *testing.T) {
	cs := ChangeSet{Entries: []Entry{{Address: "dwtest_file.a", Action: "update"}}}
	req := terraform.Request{Workspace: "ws", Binary: "/nonexistent/terraform", Source: terraform.Source{Path: filepath.Join(t.TempDir(), "missing")}, WorkDir: t.TempDir()}
	out, err := (&Applier{}).Apply(t.Context(), req, cs)
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "source", re.Phase)
	require.Equal(t, ResultFailed, out.Result)
	require.False(t, out.ApplyStarted)
	require.Equal(t, err.Error(), out.Reason)
	requireNoSandboxLeft(t, req)
}
