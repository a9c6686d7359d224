package e2etest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/testutil/s3test"
)

// Credential canaries: the workspace's S3 credentials, given to driftwatch
// only through secret_env_files. Neither may appear in any output.
const (
	s3CanaryKeyID  = "CANARYAKIDS3E2E7Q4Z"
	s3CanarySecret = "CANARY-s3-secret-9d41be"
	// A key the server does not know: its workspace fails, and the error
	// (which S3 answers with the key id in it) must not show it either.
	s3CanaryBadKeyID = "CANARYAKIDUNKNOWN3X1"
)

// s3Backend is a backend "s3" block for srv with state at key; extra is
// added inside the block.
func s3Backend(srv *s3test.Server, key, extra string) string {
	return fmt.Sprintf(`  backend "s3" {
    bucket                      = %q
    key                         = %q
    region                      = %q
    endpoints                   = { s3 = %q }
    use_path_style              = true
    skip_credentials_validation = true
    skip_region_validation      = true
    skip_requesting_account_id  = true
    skip_metadata_api_check     = true
    skip_s3_checksum            = true
%s  }
`, srv.Bucket, key, s3test.Region, srv.Endpoint, extra)
}

// s3Workspace is a workspace with two resources whose state lives in srv
// at key.
func s3Workspace(srv *s3test.Server, name, key, backendExtra string) string {
	return `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
    local  = { source = "hashicorp/local" }
  }
` + s3Backend(srv, key, backendExtra) + `}
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/` + name + `-a.txt"
  content  = "v1"
}
resource "local_file" "b" {
  filename = "@ROOT@/out/` + name + `-b.txt"
  content  = "v1"
}
`
}

// tfS3 runs the real binary in dir as an operator would, with the S3
// credentials in its environment; it returns the combined output and
// whether it succeeded.
func (e *tfEnv) tfS3(t *testing.T, srv *s3test.Server, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.root, "TF_CLI_CONFIG_FILE=" + e.cliConfig,
		"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1",
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (e *tfEnv) applyS3(t *testing.T, srv *s3test.Server, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"apply", "-auto-approve", "-input=false", "-no-color"}} {
		out, err := e.tfS3(t, srv, dir, args...)
		require.NoError(t, err, "%s %v in %s:\n%s", e.bin, args, dir, out)
	}
}

// tfState is the part of a state file the tests read.
type tfState struct {
	Serial  int    `json:"serial"`
	Lineage string `json:"lineage"`
}

func stateOf(t *testing.T, srv *s3test.Server, key string) tfState {
	t.Helper()
	body, ok := srv.Get(t, key)
	require.True(t, ok, "state object %s is in the bucket", key)
	var st tfState
	require.NoError(t, json.Unmarshal(body, &st), "%s", body)
	return st
}

// stateAttr returns the string attribute attr of the one resource of
// type typ in the state at key.
func stateAttr(t *testing.T, srv *s3test.Server, key, typ, attr string) string {
	t.Helper()
	body, ok := srv.Get(t, key)
	require.True(t, ok)
	var st struct {
		Resources []struct {
			Type      string `json:"type"`
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(body, &st))
	for _, r := range st.Resources {
		if r.Type == typ && len(r.Instances) == 1 {
			v, _ := r.Instances[0].Attributes[attr].(string)
			return v
		}
	}
	t.Fatalf("no %s in the state at %s", typ, key)
	return ""
}

// heldLock plants key's lock file as Terraform's use_lockfile writes it
// (a conditional create of <key>.tflock holding the lock info), as if
// another process were applying, and returns its content.
func heldLock(t *testing.T, srv *s3test.Server, key string) []byte {
	t.Helper()
	info, err := json.Marshal(map[string]string{
		"ID":        "3d9ab3a1-4e52-4b0e-9d6f-2f4c1d8e7a60",
		"Operation": "OperationTypeApply",
		"Info":      "",
		"Who":       "deployer@ci-runner-7",
		"Version":   "1.11.4",
		"Created":   time.Now().UTC().Format(time.RFC3339Nano),
		"Path":      srv.Bucket + "/" + key,
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, srv.Put(t, key+".tflock", info, http.Header{"If-None-Match": []string{"*"}}))
	return info
}

// s3Secrets writes the credential files secret_env_files names and
// returns the YAML mapping for a workspace.
func s3Secrets(t *testing.T, e *tfEnv, name, keyID, secret string) string {
	t.Helper()
	dir := filepath.Join(e.root, "secrets", name)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "aws-access-key-id"), []byte(keyID+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "aws-secret-access-key"), []byte(secret+"\n"), 0o600))
	return fmt.Sprintf("{ AWS_ACCESS_KEY_ID: %s, AWS_SECRET_ACCESS_KEY: %s }",
		filepath.Join(dir, "aws-access-key-id"), filepath.Join(dir, "aws-secret-access-key"))
}

func assertNoS3Canary(t *testing.T, what, s string) {
	t.Helper()
	for _, c := range []string{s3CanaryKeyID, s3CanarySecret, s3CanaryBadKeyID} {
		require.NotContains(t, s, c, "%s leaks an S3 credential", what)
	}
}

// TestS3AuditRealState: Terraform and OpenTofu keep real state in a real
// S3-compatible store (SeaweedFS) with use_lockfile; driftwatch, given the
// credentials only through secret_env_files, reads that state and finds
// the drift made behind Terraform's back; it never takes the state lock
// (it audits while another process holds it, and leaves that lock as it
// was); backend hygiene judges the real s3 block; and no credential
// appears in the report, the logs, or a daemon's stored run log.
func TestS3AuditRealState(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		srv := s3test.Start(t, s3test.Options{AccessKey: s3CanaryKeyID, SecretKey: s3CanarySecret})
		e.allowHost(t, srv.Endpoint)
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))

		// drifted: locked state, both resources changed by hand.
		const key = "teams/app/drifted.tfstate"
		drifted := e.workspace(t, "drifted", map[string]string{"main.tf": s3Workspace(srv, "drifted", key, "    use_lockfile                = true\n")})
		e.applyS3(t, srv, drifted)
		require.NoFileExists(t, filepath.Join(drifted, "terraform.tfstate"), "the state is remote")
		before := stateOf(t, srv, key)
		require.Positive(t, before.Serial)
		require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "drifted-a.txt"), []byte("hand edit"), 0o644))
		require.NoError(t, os.Remove(filepath.Join(e.root, "out", "drifted-b.txt")))

		// nolock: the same without use_lockfile (and no encrypt): hygiene
		// says so; clean otherwise.
		const nolockKey = "teams/app/nolock.tfstate"
		nolock := e.workspace(t, "nolock", map[string]string{"main.tf": s3Workspace(srv, "nolock", nolockKey, "")})
		e.applyS3(t, srv, nolock)

		// encrypted: encrypt = true and a lock file: no hygiene finding.
		const encKey = "teams/app/encrypted.tfstate"
		encrypted := e.workspace(t, "encrypted", map[string]string{"main.tf": s3Workspace(srv, "encrypted", encKey,
			"    use_lockfile                = true\n    encrypt                     = true\n")})
		encOut, encErr := e.tfS3(t, srv, encrypted, "init", "-input=false", "-no-color")
		require.NoError(t, encErr, encOut)
		if encOut, encErr = e.tfS3(t, srv, encrypted, "apply", "-auto-approve", "-input=false", "-no-color"); encErr != nil {
			// SeaweedFS may not do SSE-S3 without a KMS configured; the
			// hygiene check reads the block, not the bucket, so plan-only
			// is enough for it then.
			why := "see below"
			if strings.Contains(encOut, "StatusCode: 500") {
				why, encOut = "SeaweedFS answered 500 to the encrypted write", ""
			}
			t.Logf("apply with encrypt = true failed (%s); the hygiene check is static and still runs %s", why, encOut)
		}

		// badcreds: a key id the store does not know.
		e.workspace(t, "badcreds", map[string]string{"main.tf": s3Workspace(srv, "badcreds", key, "    use_lockfile                = true\n")})

		// The lock, held by "another process" for the whole audit.
		lock := heldLock(t, srv, key)
		out, err := e.tfS3(t, srv, drifted, "plan", "-lock-timeout=0s", "-input=false", "-no-color")
		require.Error(t, err, "the planted lock is a real lock to %s:\n%s", e.bin, out)
		require.Contains(t, out, "Error acquiring the state lock", out)

		cfg := e.config(t, fmt.Sprintf(`
defaults:
  timeout: 3m
workspaces:
  - name: drifted
    source: { path: ./drifted }
    secret_env_files: %s
  - name: nolock
    source: { path: ./nolock }
    secret_env_files: %s
  - name: encrypted
    source: { path: ./encrypted }
    secret_env_files: %s
  - name: badcreds
    source: { path: ./badcreds }
    secret_env_files: %s
`, s3Secrets(t, e, "drifted", s3CanaryKeyID, s3CanarySecret), s3Secrets(t, e, "nolock", s3CanaryKeyID, s3CanarySecret),
			s3Secrets(t, e, "encrypted", s3CanaryKeyID, s3CanarySecret), s3Secrets(t, e, "badcreds", s3CanaryBadKeyID, s3CanarySecret)))
		v := driftwatch(t, nil, "validate", "--config", cfg)
		require.Equal(t, 0, v.code, v.stdout+v.stderr)

		r := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json", "--log-level", "debug")
		require.Equal(t, 1, r.code, "badcreds errors\n%s", r.stderr)
		rep := parseReport(t, r.stdout)

		// The drift, read from the state in the bucket while it is locked.
		st, msg, fs := rep.ws(t, "drifted")
		require.Equal(t, drift.StatusDrift, st, "%s\n%s", msg, r.stderr)
		require.ElementsMatch(t, []drift.Finding{
			{Kind: drift.KindDrift, Address: "dwtest_file.a", Type: "dwtest_file", Action: "update", Attributes: []string{"content"}},
			{Kind: drift.KindDrift, Address: "local_file.b", Type: "local_file", Action: "delete", Attributes: []string{}},
		}, counted(fs))
		hygiene := backendFindings(fs)
		require.Len(t, hygiene, 1, "%+v", fs)
		require.Equal(t, "backend.s3", hygiene[0].Address)
		require.Equal(t, []string{"encrypt"}, hygiene[0].Attributes)
		require.Contains(t, hygiene[0].Detail, "encrypt = true")

		// Detection left the lock as it found it, and the state unchanged.
		got, ok := srv.Get(t, key+".tflock")
		require.True(t, ok, "the other process's lock is still there")
		require.Equal(t, string(lock), string(got), "and untouched")
		require.Equal(t, before, stateOf(t, srv, key), "detection never writes state")

		st, msg, fs = rep.ws(t, "nolock")
		require.Equal(t, drift.StatusClean, st, msg)
		hygiene = backendFindings(fs)
		require.Len(t, hygiene, 2, "%+v", fs)
		var attrs []string
		for _, h := range hygiene {
			attrs = append(attrs, strings.Join(h.Attributes, ","))
		}
		require.ElementsMatch(t, []string{"encrypt", "dynamodb_table,use_lockfile"}, attrs)

		_, _, fs = rep.ws(t, "encrypted")
		require.Empty(t, backendFindings(fs), "encrypt = true and use_lockfile: nothing to say")

		st, msg, _ = rep.ws(t, "badcreds")
		require.Equal(t, drift.StatusErrored, st)
		require.NotEmpty(t, msg)
		t.Logf("badcreds error: %s", msg)

		assertNoS3Canary(t, "json report and debug logs", r.stdout+r.stderr)
		for _, format := range []string{"table", "markdown", "junit", "sarif"} {
			r := driftwatch(t, nil, "audit", "--config", cfg, "--format", format, "--log-level", "debug")
			require.Equal(t, 1, r.code, r.stderr)
			require.Contains(t, r.stdout, "local_file.b", format)
			assertNoS3Canary(t, format, r.stdout+r.stderr)
		}

		// A daemon's stored run logs, and its own log.
		token := "dw-s3-api-token-5e0-0123456789abcdef0123456789"
		tokenFile := filepath.Join(e.root, "api-token")
		require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
		listen := freePort(t)
		dcfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
workspaces:
  - name: drifted
    source: { path: ./drifted }
    secret_env_files: %s
  - name: badcreds
    source: { path: ./badcreds }
    secret_env_files: %s
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"),
			s3Secrets(t, e, "drifted", s3CanaryKeyID, s3CanarySecret), s3Secrets(t, e, "badcreds", s3CanaryBadKeyID, s3CanarySecret)))
		d := startDaemon(t, dcfg, listen)
		runIDs := map[string]string{} // run id -> the phase its log shows
		d.eventually("first runs done", 120*time.Second, func() bool {
			a, b := d.runs("drifted"), d.runs("badcreds")
			if len(a) == 1 && a[0].Status == "drift" && len(b) == 1 && b[0].Status == "errored" {
				runIDs[a[0].ID], runIDs[b[0].ID] = "== plan", "== init"
				assertNoS3Canary(t, "stored run error", b[0].Error)
				return true
			}
			return false
		})
		for id, phase := range runIDs {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.base+"/api/v1/runs/"+id+"/logs", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
			require.Contains(t, string(b), phase)
			assertNoS3Canary(t, "stored run log "+id, string(b))
		}
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		assertNoS3Canary(t, "daemon log", d.logs.String())

		got, ok = srv.Get(t, key+".tflock")
		require.True(t, ok)
		require.Equal(t, string(lock), string(got), "the daemon's detections left the lock alone too")
		entries, err := os.ReadDir(e.workDir())
		require.NoError(t, err)
		require.Empty(t, entries, "run directories are cleaned up")
	})
}

// backendFindings returns the state-backend hygiene findings of fs.
func backendFindings(fs []drift.Finding) []drift.Finding {
	var out []drift.Finding
	for _, f := range fs {
		if f.Kind == drift.KindBackend {
			out = append(out, f)
		}
	}
	return out
}

// TestS3RemediationUnderLock: remediation applies under the real S3 lock
// file or not at all. With the lock held by someone else, lock_timeout
// 0s (set on the workspace over a longer default) refuses at once
// (state_locked) and changes nothing; lock_timeout 30s
// waits, applies once the lock is released, leaves the fix in the state
// in the bucket and no lock behind.
func TestS3RemediationUnderLock(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		srv := s3test.Start(t, s3test.Options{AccessKey: s3CanaryKeyID, SecretKey: s3CanarySecret})
		e.allowHost(t, srv.Endpoint)
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))
		keys := map[string]string{"refuse": "rem/refuse.tfstate", "wait": "rem/wait.tfstate"}
		before := map[string]tfState{}
		locks := map[string][]byte{}
		for _, n := range []string{"refuse", "wait"} {
			dir := e.workspace(t, n, map[string]string{"main.tf": s3Workspace(srv, n, keys[n], "    use_lockfile                = true\n")})
			e.applyS3(t, srv, dir)
			before[n] = stateOf(t, srv, keys[n])
			require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", n+"-a.txt"), []byte("hand edit"), 0o644))
			locks[n] = heldLock(t, srv, keys[n])
		}
		token := "dw-s3-remediation-token-0123456789abcdef0123456789"
		tokenFile := filepath.Join(e.root, "api-token")
		require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
		listen := freePort(t)
		cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
defaults:
  schedule: "@hourly"
  remediation: { lock_timeout: 10m }
workspaces:
  - name: refuse
    source: { path: ./refuse }
    secret_env_files: %s
    remediation: { mode: auto, lock_timeout: 0s }
  - name: wait
    source: { path: ./wait }
    secret_env_files: %s
    remediation: { mode: auto, lock_timeout: 30s }
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"),
			s3Secrets(t, e, "refuse", s3CanaryKeyID, s3CanarySecret), s3Secrets(t, e, "wait", s3CanaryKeyID, s3CanarySecret)))
		d := startDaemon(t, cfg, listen)

		// lock_timeout 0s: refused at once, nothing applied, the lock as it was.
		r := d.waitRemediation("refuse", 120*time.Second, "refused", "applied", "failed", "verification_failed")
		require.Equal(t, "refused", r.State, "%+v %s", r, r.Outcome)
		// The refusal is the apply's outcome (the proposal itself passed
		// the envelope, so Refusals is empty).
		require.Contains(t, string(r.Outcome), `"state_locked"`, "%+v %s", r, r.Outcome)
		require.Contains(t, r.Reason, "holds the state lock (lock ID 3d9ab3a1-4e52-4b0e-9d6f-2f4c1d8e7a60, OperationTypeApply by deployer@ci-runner-7", "the reason names the holder: %+v", r)
		t.Logf("refused: %s; outcome %s", r.Reason, r.Outcome)
		require.Equal(t, "hand edit", mustRead(t, filepath.Join(e.root, "out", "refuse-a.txt")))
		require.Equal(t, before["refuse"], stateOf(t, srv, keys["refuse"]))
		got, ok := srv.Get(t, keys["refuse"]+".tflock")
		require.True(t, ok)
		require.Equal(t, string(locks["refuse"]), string(got))

		// lock_timeout 30s: it waits for the lock, then applies.
		r = d.waitRemediation("wait", 120*time.Second, "running", "refused", "applied", "failed", "verification_failed")
		require.Equal(t, "running", r.State, "%+v %s", r, r.Outcome)
		time.Sleep(3 * time.Second)
		require.Equal(t, "running", d.remediations("wait")[0].State, "still waiting for the lock")
		require.Equal(t, "hand edit", mustRead(t, filepath.Join(e.root, "out", "wait-a.txt")))
		released := time.Now()
		srv.Delete(t, keys["wait"]+".tflock")
		r = d.waitRemediation("wait", 60*time.Second, "applied", "refused", "failed", "verification_failed")
		require.Equal(t, "applied", r.State, "%+v %s", r, r.Outcome)
		t.Logf("applied %s after the lock was released", time.Since(released).Round(time.Second))
		require.Equal(t, "v1", mustRead(t, filepath.Join(e.root, "out", "wait-a.txt")))
		// The state in the bucket holds the fix. Its serial is the one from
		// before the hand edit: detection (-lock=false) never wrote the
		// drifted value into state, so the reverted state is the recorded
		// one and Terraform, which bumps the serial only on a change,
		// leaves it as it was.
		after := stateOf(t, srv, keys["wait"])
		require.Equal(t, before["wait"].Lineage, after.Lineage)
		require.Equal(t, before["wait"].Serial, after.Serial)
		require.Equal(t, "v1", stateAttr(t, srv, keys["wait"], "dwtest_file", "content"))
		_, ok = srv.Get(t, keys["wait"]+".tflock")
		require.False(t, ok, "no lock left behind")

		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		assertNoS3Canary(t, "daemon log", d.logs.String())
	})
}
