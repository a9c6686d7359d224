package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/backend/backendpolicy"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// realPlan parses one of planparse's fixtures, made by real Terraform.
func realPlan(t *testing.T, name string) *planparse.Plan {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "terraform", "planparse", "testdata", name, "plan.json"))
	require.NoError(t, err)
	defer f.Close()
	p, err := planparse.Parse(f)
	require.NoError(t, err)
	return p
}

func okResult(t *testing.T, runID string) Result {
	return ResultOf(runID, runner.Result{
		Plan:     realPlan(t, "content_drift"),
		ExitCode: 2,
		Tool:     "terraform 1.11.4",
		Commit:   "0123abc",
		Phases:   []drift.Phase{{Name: "init", Duration: time.Second}, {Name: "plan", Duration: 2 * time.Second}},
	}, nil)
}

func TestNewToken(t *testing.T) {
	a, ha := NewToken()
	b, hb := NewToken()
	require.NotEqual(t, a, b)
	require.Len(t, a, 43) // 32 bytes, base64url without padding
	require.Equal(t, HashToken(a), ha)
	require.NotEqual(t, ha, hb)
	h, err := ParseHash(FormatHash(ha))
	require.NoError(t, err)
	require.Equal(t, ha, h)
	_, err = ParseHash("abc")
	require.Error(t, err)
	require.NotContains(t, FormatHash(ha), a)
}

// TestResultRoundTrip sends a parsed plan of a real Terraform run through
// JSON and back, and checks that no attribute value is on the wire but
// the drifted object's identifying attributes (the attribution command's
// query) and the managed instances' ids (what scans compare).
func TestResultRoundTrip(t *testing.T) {
	in := okResult(t, "run-1")
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(b), "/driftwatch-fixture"), "the drifted file's id, and each managed file's (what scans compare)")
	require.Contains(t, string(b), `"IDs":{"id":"/driftwatch-fixture/a.txt"}`)
	for _, value := range []string{"tampered", `"v1"`, `"same"`} {
		require.NotContains(t, string(b), value, "an attribute value crossed the wire")
	}
	require.Contains(t, string(b), "dwtest_file.a")
	var out Result
	require.NoError(t, json.Unmarshal(b, &out))
	if d := cmp.Diff(in, out); d != "" {
		t.Fatalf("round trip mismatch (-want +got):\n%s", d)
	}
	res, err := out.Unpack()
	require.NoError(t, err)
	require.Equal(t, in.Result, res)
}

// A scan's list crosses the wire, empty ones too; a result with neither a
// plan nor a list, or with both, is refused.
func TestResultScan(t *testing.T) {
	for _, listed := range [][]drift.Listed{{{Type: "dwtest_file", DisplayName: "/srv/a", Identity: map[string]string{"filename": "/srv/a"}}}, {}} {
		in := ResultOf("run-1", runner.Result{Listed: listed, Tool: "terraform 1.14.9"}, nil)
		b, err := json.Marshal(in)
		require.NoError(t, err)
		var out Result
		require.NoError(t, json.Unmarshal(b, &out))
		require.NoError(t, out.validate("run-1"))
		res, err := out.Unpack()
		require.NoError(t, err)
		require.Equal(t, listed, res.Listed)
	}
	empty := ResultOf("run-1", runner.Result{}, nil)
	require.EqualError(t, empty.validate("run-1"), "result has neither a plan, a scan's list nor an error")
	both := okResult(t, "run-1")
	both.Result.Listed = []drift.Listed{}
	require.EqualError(t, both.validate("run-1"), "result has both a plan and a scan's list")
}

func TestResultErrors(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		wantPhase string
		wantMsg   string
		timeout   bool
		canceled  bool
	}{
		{
			name:      "runner error",
			err:       &terraform.Error{Phase: "plan", Reason: "Error: no such bucket", Err: errors.New("exit status 1")},
			wantPhase: "plan", wantMsg: "plan: Error: no such bucket",
		},
		{
			name:      "timeout",
			err:       &terraform.Error{Phase: "plan", Reason: "run timed out after 1m0s", Err: errors.Join(terraform.ErrTimeout, errors.New("signal: interrupt"))},
			wantPhase: "plan", wantMsg: "plan: run timed out after 1m0s", timeout: true,
		},
		{
			name:      "canceled",
			err:       &terraform.Error{Phase: "init", Reason: "context canceled", Err: context.Canceled},
			wantPhase: "init", wantMsg: "init: context canceled", canceled: true,
		},
		{
			name:      "plain error",
			err:       errors.New("boom"),
			wantPhase: "runner", wantMsg: "runner: boom",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			partial := runner.Result{Tool: "tofu 1.10.6", Phases: []drift.Phase{{Name: "source", Duration: time.Millisecond}}}
			in := ResultOf("r", partial, tc.err)
			b, err := json.Marshal(in)
			require.NoError(t, err)
			var out Result
			require.NoError(t, json.Unmarshal(b, &out))
			res, err := out.Unpack()
			require.Equal(t, partial, res, "partial results (tool, phases) survive a failure")
			var re *terraform.Error
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.wantPhase, re.Phase)
			require.Equal(t, tc.wantMsg, err.Error())
			require.Equal(t, tc.timeout, errors.Is(err, terraform.ErrTimeout))
			require.Equal(t, tc.canceled, errors.Is(err, context.Canceled))
		})
	}
	_, err := Result{Version: Version, RunID: "r"}.Unpack()
	require.Error(t, err, "neither plan nor error")
}

func TestSpec(t *testing.T) {
	s := Spec{
		Version: Version, RunID: "r1", Workspace: "prod-net", Binary: "tofu",
		Source:         Source{Git: &Git{URL: "https://git.example/infra.git", Ref: "main", Path: "net", CredentialsFile: "/etc/driftwatch/secrets/git-credentials"}},
		TFWorkspace:    "prod",
		VarFiles:       []string{"prod.tfvars"},
		Vars:           map[string]string{"region": "eu-west-1"},
		Env:            map[string]string{"AWS_REGION": "eu-west-1"},
		SecretEnvFiles: map[string]string{"AWS_SECRET_ACCESS_KEY": "/etc/driftwatch/secrets/AWS_SECRET_ACCESS_KEY"},
		BackendConfig:  []string{"key=net.tfstate"},
		Timeout:        Duration(10 * time.Minute), KillGrace: Duration(5 * time.Second),
		WorkDir: "/work", GitCacheDir: "/work/git",
		CallbackURL: "http://driftwatch.ops.svc:8080/internal/v1/runs/r1/result",
		TokenFile:   "/etc/driftwatch/run/token",
		ExpiresAt:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	b, err := s.Encode()
	require.NoError(t, err)
	require.Contains(t, string(b), `"timeout": "10m0s"`)
	got, err := DecodeSpec(bytes.NewReader(b))
	require.NoError(t, err)
	if d := cmp.Diff(&s, got); d != "" {
		t.Fatalf("spec round trip (-want +got):\n%s", d)
	}
	req := got.Request()
	require.Equal(t, terraform.Request{
		RunID: "r1", Workspace: "prod-net", Binary: "tofu",
		Source:         terraform.Source{Git: &terraform.Git{URL: "https://git.example/infra.git", Ref: "main", Path: "net", CredentialsFile: "/etc/driftwatch/secrets/git-credentials"}},
		TFWorkspace:    "prod",
		VarFiles:       []string{"prod.tfvars"},
		Vars:           map[string]string{"region": "eu-west-1"},
		Env:            map[string]string{"AWS_REGION": "eu-west-1"},
		SecretEnvFiles: map[string]string{"AWS_SECRET_ACCESS_KEY": "/etc/driftwatch/secrets/AWS_SECRET_ACCESS_KEY"},
		BackendConfig:  []string{"key=net.tfstate"},
		Timeout:        10 * time.Minute, KillGrace: 5 * time.Second,
		WorkDir: "/work", GitCacheDir: "/work/git",
	}, req)

	_, err = DecodeSpec(strings.NewReader(`{"version":2,"source":{}}`))
	require.EqualError(t, err, "invalid spec: unsupported spec version 2 (this build speaks 1)\n"+
		"run_id is required\nworkspace is required\nexactly one of source.path and source.git is required\n"+
		"callback_url: \"\" is not an absolute http(s) URL\ntoken_file is required\nexpires_at is required")
	_, err = DecodeSpec(strings.NewReader(`{`))
	require.ErrorContains(t, err, "decode spec")
}

// The pod runs the backend hygiene checks with the workspace's policy: it
// crosses the spec file and comes back as the request's; no policy in the
// spec means no check.
func TestSpecCarriesBackendPolicy(t *testing.T) {
	p := backendpolicy.Policy{Enabled: true, RequireLocking: true, CheckBucketPolicy: true}
	s := Spec{Version: Version, RunID: "r1", Workspace: "w", Source: Source{Path: "/src"}, Backend: &p,
		CallbackURL: "https://d.example/internal/v1/runs/r1/result", TokenFile: "/t", ExpiresAt: time.Now().Add(time.Hour)}
	b, err := s.Encode()
	require.NoError(t, err)
	require.Contains(t, string(b), `"check_bucket_policy": true`)
	got, err := DecodeSpec(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, p, got.Request().Backend)
	s.Backend = nil
	b, err = s.Encode()
	require.NoError(t, err)
	got, err = DecodeSpec(bytes.NewReader(b))
	require.NoError(t, err)
	require.False(t, got.Request().Backend.Enabled)
}
