package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// globs compares policy.Glob by pattern (its compiled form is unexported).
var globs = cmp.Comparer(func(a, b policy.Glob) bool { return a.String() == b.String() })

func testApproved() engine.ChangeSet {
	return engine.ChangeSet{Entries: []engine.Entry{
		{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}},
		{Address: "aws_s3_bucket.logs", Action: "update", Attributes: []string{"tags.owner"}},
	}}.Normalize()
}

func testApplier() *engine.Applier {
	return &engine.Applier{
		Rules: policy.Rules{
			Forbidden: []policy.Glob{policy.MustCompileGlob("kubernetes_*"), policy.MustCompileGlob("helm_release")},
			Ignore: []policy.IgnoreRule{
				{Address: policy.MustCompileGlob("aws_instance.*"), Attributes: []policy.Glob{policy.MustCompileGlob("tags.*")}},
				{Address: policy.MustCompileGlob("random_*")},
			},
		},
		Envelope:    engine.Envelope{AllowActions: []string{"update", "create"}, MaxResources: 4},
		LockTimeout: 45 * time.Second,
	}
}

func remediationSpec(rem *Remediation) Spec {
	return Spec{
		Version: Version, RunID: "apply-1", Workspace: "prod-net", Source: Source{Path: "/src"},
		Timeout: Duration(10 * time.Minute), WorkDir: "/work",
		Remediation: rem,
		CallbackURL: "http://driftwatch.ops.svc:8080/internal/v1/runs/apply-1/result",
		ProceedURL:  "http://driftwatch.ops.svc:8080/internal/v1/runs/apply-1/proceed",
		TokenFile:   "/etc/driftwatch/run/token",
		ExpiresAt:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// TestRemediationSpec: the applier's rules, envelope and lock timeout and
// the approved change set survive the spec's JSON, and the pod's Applier
// is the daemon's (but for the daemon-only logger and kill switch).
func TestRemediationSpec(t *testing.T) {
	a, approved := testApplier(), testApproved()
	rem := RemediationOf(a, approved)
	require.Equal(t, approved.Hash(), rem.ChangeSetHash)
	s := remediationSpec(rem)
	b, err := s.Encode()
	require.NoError(t, err)
	require.Contains(t, string(b), `"lock_timeout": "45s"`)
	require.Contains(t, string(b), `"forbidden": [`)
	got, err := DecodeSpec(bytes.NewReader(b))
	require.NoError(t, err)
	if d := cmp.Diff(&s, got, globs); d != "" {
		t.Fatalf("spec round trip (-want +got):\n%s", d)
	}

	log := slog.New(slog.DiscardHandler)
	pod := got.Remediation.Applier(log)
	require.Same(t, log, pod.Logger)
	if d := cmp.Diff(a.Rules, pod.Rules, globs); d != "" {
		t.Fatalf("pod's rules (-daemon +pod):\n%s", d)
	}
	require.Equal(t, a.Envelope, pod.Envelope)
	require.Equal(t, a.LockTimeout, pod.LockTimeout)
	require.Nil(t, pod.Paused, "the pod has no kill switch: it asks the daemon (Proceed)")

	t.Run("invalid", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			mutate func(*Remediation)
			want   string
		}{
			{"tampered change set", func(r *Remediation) { r.Approved.Entries[0].Action = "delete" },
				`invalid spec: remediation.change_set_hash: "` + approved.Hash() + `" is not the approved change set's hash`},
			{"empty change set", func(r *Remediation) {
				r.Approved, r.ChangeSetHash = engine.ChangeSet{}, engine.ChangeSet{}.Hash()
			},
				"invalid spec: remediation.approved: the change set is empty"},
			{"unknown action", func(r *Remediation) { r.Envelope.AllowActions = []string{"destroy"} },
				`invalid spec: remediation.envelope: allow_actions: unknown action "destroy"`},
			{"negative lock timeout", func(r *Remediation) { r.LockTimeout = Duration(-time.Second) },
				"invalid spec: remediation.lock_timeout: must not be negative"},
			{"no proceed url", func(*Remediation) {}, `invalid spec: proceed_url: "" is not an absolute http(s) URL`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := RemediationOf(testApplier(), testApproved())
				tc.mutate(r)
				s := remediationSpec(r)
				if tc.name == "no proceed url" {
					s.ProceedURL = ""
				}
				b, err := s.Encode()
				require.NoError(t, err)
				_, err = DecodeSpec(bytes.NewReader(b))
				require.ErrorContains(t, err, tc.want)
			})
		}
	})
}

func appliedOutcome() engine.Outcome {
	return engine.Outcome{
		Result:       engine.ResultApplied,
		Before:       testApproved(),
		ApplyStarted: true,
		Tool:         "terraform 1.11.4",
		Phases:       []drift.Phase{{Name: "plan", Duration: time.Second}, {Name: "apply", Duration: 2 * time.Second}},
	}
}

func TestOutcomeResult(t *testing.T) {
	roundTrip := func(t *testing.T, in Result) Result {
		t.Helper()
		require.NoError(t, in.validate(in.RunID))
		b, err := json.Marshal(in)
		require.NoError(t, err)
		var out Result
		require.NoError(t, json.Unmarshal(b, &out))
		require.NoError(t, out.validate(in.RunID))
		return out
	}
	t.Run("applied", func(t *testing.T) {
		got, err := roundTrip(t, OutcomeOf("apply-1", appliedOutcome(), nil)).UnpackOutcome()
		require.NoError(t, err)
		if d := cmp.Diff(appliedOutcome(), got); d != "" {
			t.Fatalf("outcome (-want +got):\n%s", d)
		}
	})
	t.Run("refused", func(t *testing.T) {
		in := engine.Outcome{Result: engine.ResultRefused, Reason: "plan_changed: the plan changed since approval",
			Refusals: []engine.Refusal{{Code: engine.CodePlanChanged, Reason: "the plan changed since approval"}}}
		got, err := roundTrip(t, OutcomeOf("apply-1", in, nil)).UnpackOutcome()
		require.NoError(t, err)
		require.Equal(t, in, got)
	})
	t.Run("failed", func(t *testing.T) {
		runErr := &terraform.Error{Phase: "apply", Reason: "run timed out after 10m0s", Err: errors.Join(terraform.ErrTimeout, errors.New("signal: interrupt"))}
		in := engine.Outcome{Result: engine.ResultFailed, Reason: runErr.Error(), ApplyStarted: true, Tool: "tofu 1.10.6"}
		got, err := roundTrip(t, OutcomeOf("apply-1", in, runErr)).UnpackOutcome()
		require.Equal(t, in, got)
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "apply", re.Phase)
		require.EqualError(t, err, "apply: run timed out after 10m0s")
		require.ErrorIs(t, err, terraform.ErrTimeout)
	})
	t.Run("kinds do not mix", func(t *testing.T) {
		_, err := OutcomeOf("apply-1", appliedOutcome(), nil).Unpack()
		require.EqualError(t, err, "result: remote result is a remediation outcome, not a plan")
		out, err := okResult(t, "run-1").UnpackOutcome()
		require.EqualError(t, err, "result: remote result is not a remediation outcome")
		require.Equal(t, engine.ResultFailed, out.Result)
		require.True(t, out.ApplyStarted, "unknown: it may have")
	})
	t.Run("inconsistent", func(t *testing.T) {
		withPlan := OutcomeOf("r", appliedOutcome(), nil)
		withPlan.Result = okResult(t, "r").Result
		for _, tc := range []struct {
			name string
			res  Result
			want string
		}{
			{"failed without an error", OutcomeOf("r", engine.Outcome{Result: engine.ResultFailed}, nil), "failed outcome without an error"},
			{"applied with an error", OutcomeOf("r", appliedOutcome(), errors.New("boom")), "outcome applied with an error"},
			{"unknown result", OutcomeOf("r", engine.Outcome{Result: "done"}, nil), `unknown outcome result "done"`},
			{"plan and outcome", withPlan, "result has both a plan and a remediation outcome"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.EqualError(t, tc.res.validate("r"), tc.want)
			})
		}
	})
}

// TestReceiverOutcome: an outcome goes through the Receiver like a plan:
// authenticated by the run's token, once, validated, size-limited.
func TestReceiverOutcome(t *testing.T) {
	r := NewReceiver(ReceiverOptions{MaxBodyBytes: 4 << 10})
	srv := receiverServer(t, r)
	url := srv.URL + ResultPath("apply-1")
	tok, hash := NewToken()
	ch, err := r.Expect("apply-1", hash, time.Now().Add(time.Hour))
	require.NoError(t, err)
	enc := func(res Result) []byte {
		b, err := json.Marshal(res)
		require.NoError(t, err)
		return b
	}

	code, msg := send(t, url, delivery{token: tok, body: enc(OutcomeOf("apply-1", engine.Outcome{Result: engine.ResultFailed}, nil))})
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "failed outcome without an error", msg)
	big := appliedOutcome()
	big.Reason = string(bytes.Repeat([]byte("x"), 8<<10))
	code, _ = send(t, url, delivery{token: tok, body: enc(OutcomeOf("apply-1", big, nil))})
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	forged, _ := NewToken()
	code, _ = send(t, url, delivery{token: forged, body: enc(OutcomeOf("apply-1", appliedOutcome(), nil))})
	require.Equal(t, http.StatusForbidden, code)
	require.Empty(t, ch, "nothing refused was delivered")

	code, msg = send(t, url, delivery{token: tok, encoding: "gzip", body: gz(t, enc(OutcomeOf("apply-1", appliedOutcome(), nil)))})
	require.Equal(t, http.StatusNoContent, code, msg)
	got, err := (<-ch).Result.UnpackOutcome()
	require.NoError(t, err)
	require.Equal(t, engine.ResultApplied, got.Result)
	// Single use: the same token cannot deliver another outcome; trying
	// is a conflict, reported to the awaiter.
	code, _ = send(t, url, delivery{token: tok, body: enc(OutcomeOf("apply-1", engine.Outcome{Result: engine.ResultRefused}, nil))})
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, ErrConflictingResults, (<-ch).Conflict)
}

func TestRunInPodRemediation(t *testing.T) {
	paused := &engine.Refusal{Code: engine.CodePaused, Reason: "remediation is paused (global kill switch)"}
	var asked []string
	r := NewReceiver(ReceiverOptions{Proceed: func(_ context.Context, runID string) *engine.Refusal {
		asked = append(asked, runID)
		return paused
	}})
	srv := receiverServer(t, r)
	expires := time.Now().Add(time.Hour)
	dir := t.TempDir()
	specPath, _, hash := writeSpec(t, dir, srv.URL+ResultPath("pod-run"), expires)
	s, err := LoadSpec(specPath)
	require.NoError(t, err)
	s.Remediation = RemediationOf(testApplier(), testApproved())
	s.ProceedURL = srv.URL + ProceedPath("pod-run")
	b, err := s.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spec.json"), b, 0o600))
	ch, err := r.Expect("pod-run", hash, expires)
	require.NoError(t, err)

	var gotReq terraform.Request
	var gotRem *Remediation
	runErr := &terraform.Error{Phase: "apply", Reason: "Error: permission denied"}
	failed := engine.Outcome{Result: engine.ResultFailed, Reason: runErr.Error(), ApplyStarted: true}
	p := runPod(t, specPath, runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
		t.Fatal("a remediation spec ran a detection")
		return runner.Result{}, nil
	}), func(ctx context.Context, req terraform.Request, rem *Remediation, proceed func(context.Context) *engine.Refusal) (engine.Outcome, error) {
		gotReq, gotRem = req, rem
		require.NotNil(t, req.Log, "the apply's log goes to the reporter")
		gotReq.Log = nil
		// The proceed check asks the daemon, through the reporter (the
		// runner has no token), with the run's token.
		require.Equal(t, paused, proceed(ctx))
		require.Equal(t, []string{"pod-run"}, asked)
		return failed, runErr
	})
	require.NoError(t, p.runnerErr, "a failed apply that was handed over is not a pod failure")
	require.NoError(t, p.reporterErr)
	require.Equal(t, s.Request(), gotReq)
	if d := cmp.Diff(s.Remediation, gotRem, globs); d != "" {
		t.Fatalf("remediation (-want +got):\n%s", d)
	}
	out, err := (<-ch).Result.UnpackOutcome()
	require.EqualError(t, err, "apply: Error: permission denied")
	require.Equal(t, failed, out)

	t.Run("reporter gone: fails closed", func(t *testing.T) {
		sock := socketPath(t)
		ln, err := listenHandoff(sock)
		require.NoError(t, err)
		go func() {
			// A reporter that takes the connection and dies.
			if c, err := acceptOne(t.Context(), ln); err == nil {
				c.Close()
			}
		}()
		err = RunInPod(t.Context(), specPath, sock, nil, func(ctx context.Context, _ terraform.Request, _ *Remediation, proceed func(context.Context) *engine.Refusal) (engine.Outcome, error) {
			ref := proceed(ctx)
			require.NotNil(t, ref, "no answer means no apply")
			require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
			require.Contains(t, ref.Reason, "nothing applied")
			return engine.Outcome{Result: engine.ResultRefused, Refusals: []engine.Refusal{*ref}}, nil
		})
		require.ErrorContains(t, err, "hand the result over to the reporter")
	})
}
