package kube

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/driftwatch/driftwatch/internal/backend/backendpolicy"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

var testNow = time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)

func testConfig() Config {
	return Config{
		Namespace:        "driftwatch-runs",
		Image:            "ghcr.io/driftwatch/driftwatch:1.2.3",
		ImagePullSecrets: []string{"regcred"},
		ServiceAccount:   "driftwatch-run",
		CallbackURL:      "http://driftwatch.driftwatch.svc:8080/",
		CLIConfigFile:    "/etc/driftwatch/terraformrc",
		TTLAfterFinished: 30 * time.Minute,
		Workspaces: map[string]Workspace{
			"prod-net": {
				SecretEnv: map[string]SecretKeyRef{
					"AWS_SECRET_ACCESS_KEY": {Name: "aws", Key: "secret"},
					"AWS_ACCESS_KEY_ID":     {Name: "aws", Key: "id"},
				},
				GitCredentials: &SecretKeyRef{Name: "git", Key: "token"},
				Resources:      Resources{Limits: map[string]string{"memory": "4Gi"}},
			},
		},
	}
}

func testRequest() terraform.Request {
	return terraform.Request{
		RunID:          "9f8e7d6c5b4a3921",
		Workspace:      "prod-net",
		Binary:         "terraform",
		Source:         terraform.Source{Git: &terraform.Git{URL: "https://git.example/infra.git", Ref: "main", Path: "net", CredentialsFile: "/var/run/secrets/git-token"}},
		TFWorkspace:    "prod",
		VarFiles:       []string{"prod.tfvars"},
		Vars:           map[string]string{"region": "eu-west-1"},
		Env:            map[string]string{"AWS_REGION": "eu-west-1"},
		SecretEnvFiles: map[string]string{"AWS_SECRET_ACCESS_KEY": "/daemon/path/aws-secret"},
		BackendConfig:  []string{"key=net.tfstate"},
		Backend:        backendpolicy.Policy{Enabled: true, RequireEncryption: true, RequireLocking: true, CheckBucketPolicy: true},
		Timeout:        15 * time.Minute,
		// Daemon-local paths that must not reach the pod:
		CLIConfigFile:  "/home/daemon/.terraformrc",
		PluginCacheDir: "/var/cache/driftwatch/plugins",
		WorkDir:        "/var/lib/driftwatch/work",
		GitCacheDir:    "/var/cache/driftwatch/git",
		KillGrace:      5 * time.Second,
	}
}

func TestJobName(t *testing.T) {
	cases := []struct {
		name, workspace, runID, want string
	}{
		{"simple", "prod-net", "9f8e7d6c5b4a3921", "driftwatch-prod-net-" + runHash("9f8e7d6c5b4a3921")},
		{"odd characters", "Prod_Net.EU", "r1", "driftwatch-prod-net-eu-" + runHash("r1")},
		{"only odd characters", "___", "r1", "driftwatch-" + runHash("r1")},
		{"long", strings.Repeat("a", 63), "r1", "driftwatch-" + strings.Repeat("a", 41) + "-" + runHash("r1")},
		{"cut at a dash", strings.Repeat("a", 40) + "-b", "r1", "driftwatch-" + strings.Repeat("a", 40) + "-" + runHash("r1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := JobName(tc.workspace, tc.runID)
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, len(got), 63)
			require.Empty(t, validation.IsDNS1123Label(got))
			require.Empty(t, validation.IsValidLabelValue(got), "the job-name label holds it")
			require.Equal(t, got, JobName(tc.workspace, tc.runID), "deterministic")
		})
	}
	require.NotEqual(t, JobName("ws", "r1"), JobName("ws", "r2"))
}

func runHash(runID string) string {
	n := JobName("", runID)
	return n[len("driftwatch-"):]
}

func TestLabelValue(t *testing.T) {
	require.Equal(t, "prod-net", labelValue("prod-net"))
	require.Equal(t, "9f8e7d6c5b4a3921", labelValue("9f8e7d6c5b4a3921"))
	for _, s := range []string{"a b", "team/app", strings.Repeat("x", 64), "-lead", "日本", "a b!"} {
		v := labelValue(s)
		require.Empty(t, validation.IsValidLabelValue(v), "%q -> %q", s, v)
	}
	require.NotEqual(t, labelValue("a b"), labelValue("a b!"), "distinct names stay distinct")
	require.NotEqual(t, labelValue("a b"), labelValue("a-b"))
}

func TestSelectors(t *testing.T) {
	require.Equal(t, "app.kubernetes.io/managed-by=driftwatch", ManagedSelector())
	require.Equal(t, "app.kubernetes.io/managed-by=driftwatch,driftwatch.io/workspace=prod-net", WorkspaceSelector("prod-net"))
	// The selectors parse and match the labels the Job carries, and only
	// those of its workspace.
	spec := func(ws, runID string) remote.Spec { return remote.Spec{Workspace: ws, RunID: runID} }
	sel, err := labels.Parse(WorkspaceSelector("prod-net"))
	require.NoError(t, err)
	require.True(t, sel.Matches(labels.Set(runLabels(spec("prod-net", "r1")))))
	require.False(t, sel.Matches(labels.Set(runLabels(spec("prod-net-2", "r1")))))
	sel, err = labels.Parse(WorkspaceSelector("team/app x"))
	require.NoError(t, err)
	require.True(t, sel.Matches(labels.Set(runLabels(spec("team/app x", "r1")))))
	all, err := labels.Parse(ManagedSelector())
	require.NoError(t, err)
	require.True(t, all.Matches(labels.Set(runLabels(spec("any", "r")))))
	// A remediation Job is one of the workspace's runs too (one active Job
	// per workspace), told apart by its kind.
	rem := spec("prod-net", "r2")
	rem.Remediation = &remote.Remediation{}
	sel, err = labels.Parse(WorkspaceSelector("prod-net"))
	require.NoError(t, err)
	require.True(t, sel.Matches(labels.Set(runLabels(rem))))
	require.Equal(t, KindRemediate, runLabels(rem)[LabelKind])
	require.Equal(t, KindDetect, runLabels(spec("prod-net", "r1"))[LabelKind])
}

func TestPrepare(t *testing.T) {
	cfg := testConfig().withDefaults()
	p, err := prepare(cfg, testRequest(), testNow)
	require.NoError(t, err)
	require.Equal(t, JobName("prod-net", "9f8e7d6c5b4a3921"), p.name)
	// 15m timeout + 5s grace + 2m startup allowance.
	require.Equal(t, 17*time.Minute+5*time.Second, p.deadline)
	want := remote.Spec{
		Version:     remote.Version,
		RunID:       "9f8e7d6c5b4a3921",
		Workspace:   "prod-net",
		Binary:      "terraform",
		Source:      remote.Source{Git: &remote.Git{URL: "https://git.example/infra.git", Ref: "main", Path: "net", CredentialsFile: GitCredentialsFile}},
		TFWorkspace: "prod",
		VarFiles:    []string{"prod.tfvars"},
		Vars:        map[string]string{"region": "eu-west-1"},
		Env:         map[string]string{"AWS_REGION": "eu-west-1"},
		SecretEnvFiles: map[string]string{
			"AWS_ACCESS_KEY_ID":     "/etc/driftwatch/secrets/AWS_ACCESS_KEY_ID",
			"AWS_SECRET_ACCESS_KEY": "/etc/driftwatch/secrets/AWS_SECRET_ACCESS_KEY",
		},
		BackendConfig: []string{"key=net.tfstate"},
		// The pod runs the backend checks with the workspace's policy.
		Backend:       &backendpolicy.Policy{Enabled: true, RequireEncryption: true, RequireLocking: true, CheckBucketPolicy: true},
		Timeout:       remote.Duration(15 * time.Minute),
		KillGrace:     remote.Duration(5 * time.Second),
		CLIConfigFile: "/etc/driftwatch/terraformrc",
		WorkDir:       "/work",
		GitCacheDir:   "/work/git",
		CallbackURL:   "http://driftwatch.driftwatch.svc:8080/internal/v1/runs/9f8e7d6c5b4a3921/result",
		LogURL:        "http://driftwatch.driftwatch.svc:8080/internal/v1/runs/9f8e7d6c5b4a3921/log",
		TokenFile:     "/etc/driftwatch/token/token",
		ExpiresAt:     testNow.Add(17*time.Minute + 5*time.Second + time.Minute),
	}
	if d := cmp.Diff(want, p.spec); d != "" {
		t.Fatalf("spec (-want +got):\n%s", d)
	}
	require.NoError(t, p.spec.Validate())
	require.Equal(t, []secretMount{
		{file: "AWS_ACCESS_KEY_ID", ref: SecretKeyRef{Name: "aws", Key: "id"}},
		{file: "AWS_SECRET_ACCESS_KEY", ref: SecretKeyRef{Name: "aws", Key: "secret"}},
		{file: "git-credentials", ref: SecretKeyRef{Name: "git", Key: "token"}},
	}, p.mounts)
	require.Equal(t, "4Gi", p.resources.Limits["memory"], "workspace override")
	require.Equal(t, "2", p.resources.Limits["cpu"], "default kept")

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			mutate func(*terraform.Request)
			want   string
		}{
			{"unmapped secret env", func(r *terraform.Request) {
				r.SecretEnvFiles = map[string]string{"B_TOKEN": "/x", "A_TOKEN": "/y", "AWS_SECRET_ACCESS_KEY": "/z"}
			}, `workspace "prod-net": secret env A_TOKEN, B_TOKEN has no Kubernetes Secret key`},
			{"unmapped git credentials", func(r *terraform.Request) { r.Workspace = "other" }, ""},
			{"no source", func(r *terraform.Request) { r.Source = terraform.Source{} }, "exactly one of a path and a git source"},
			{"no run id", func(r *terraform.Request) { r.RunID = "" }, "run id and workspace are required"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := testRequest()
				tc.mutate(&req)
				if tc.name == "unmapped git credentials" {
					req.SecretEnvFiles = nil
					_, err := prepare(cfg, req, testNow)
					require.ErrorContains(t, err, `workspace "other": the git source has a credentials file but no Kubernetes Secret key`)
					return
				}
				_, err := prepare(cfg, req, testNow)
				require.ErrorContains(t, err, tc.want)
			})
		}
	})
	t.Run("path source, defaults", func(t *testing.T) {
		req := terraform.Request{RunID: "r", Workspace: "dev", Source: terraform.Source{Path: "/modules/dev"}}
		p, err := prepare(cfg, req, testNow)
		require.NoError(t, err)
		require.Equal(t, DefaultTimeout+DefaultKillGrace+DefaultStartupAllowance, p.deadline)
		require.Equal(t, "/modules/dev", p.spec.Source.Path)
		require.Nil(t, p.spec.SecretEnvFiles)
		require.Empty(t, p.mounts)
		require.NoError(t, p.spec.Validate())
	})
}

// golden compares v, as indented JSON, with testdata/name (rewritten with
// -update).
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Fatalf("%s mismatch (-want +got), rerun with -update if intended:\n%s", path, d)
	}
}

func testHash() [32]byte { return remote.HashToken("test-token") }

func TestBuildJob(t *testing.T) {
	cfg := testConfig().withDefaults()
	p, err := prepare(cfg, testRequest(), testNow)
	require.NoError(t, err)
	job := buildJob(cfg, p, testHash())
	golden(t, "job.golden.json", job)

	// Every sandbox and lifecycle field, spelled out.
	require.Equal(t, "driftwatch-runs", job.Namespace)
	require.Equal(t, p.name, job.Name)
	require.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by": "driftwatch",
		"app.kubernetes.io/name":       "driftwatch",
		"app.kubernetes.io/component":  "runner",
		"driftwatch.io/workspace":      "prod-net",
		"driftwatch.io/run-id":         "9f8e7d6c5b4a3921",
		"driftwatch.io/kind":           "detect",
	}, job.Labels)
	require.Equal(t, job.Labels, job.Spec.Template.Labels, "pods are found by the same labels")
	require.Equal(t, remote.FormatHash(testHash()), job.Annotations[AnnotationTokenHash])
	require.NotContains(t, mustJSON(t, job), "test-token", "the token never goes into the Job")
	require.Equal(t, "2026-05-04T03:20:06Z", job.Annotations[AnnotationExpiresAt])

	s := job.Spec
	require.Equal(t, int64(17*60+5), *s.ActiveDeadlineSeconds)
	require.Equal(t, int32(0), *s.BackoffLimit)
	require.Equal(t, int32(1800), *s.TTLSecondsAfterFinished)
	require.Equal(t, []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		// Either container's non-zero exit fails the Job.
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}}},
	}, s.PodFailurePolicy.Rules)

	ps := s.Template.Spec
	require.Equal(t, corev1.RestartPolicyNever, ps.RestartPolicy)
	require.Equal(t, "driftwatch-run", ps.ServiceAccountName)
	require.False(t, *ps.AutomountServiceAccountToken)
	require.False(t, *ps.EnableServiceLinks)
	require.Equal(t, []corev1.LocalObjectReference{{Name: "regcred"}}, ps.ImagePullSecrets)
	require.True(t, *ps.SecurityContext.RunAsNonRoot)
	require.Equal(t, int64(65532), *ps.SecurityContext.RunAsUser)
	require.Equal(t, int64(65532), *ps.SecurityContext.RunAsGroup)
	require.Equal(t, int64(65532), *ps.SecurityContext.FSGroup)
	require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, ps.SecurityContext.SeccompProfile.Type)
	require.False(t, ps.HostNetwork || ps.HostPID || ps.HostIPC)

	require.False(t, *ps.ShareProcessNamespace, "no container may see another's processes (nor their files through /proc)")

	// Two containers: the runner (Terraform, no token) and the reporter
	// (the token, no Terraform).
	require.Len(t, ps.Containers, 2)
	c, rc := ps.Containers[0], ps.Containers[1]
	require.Equal(t, "runner", c.Name)
	require.Equal(t, "reporter", rc.Name)
	require.Equal(t, "ghcr.io/driftwatch/driftwatch:1.2.3", c.Image)
	require.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
	require.Equal(t, []string{"driftwatch", "runner", "--spec", "/etc/driftwatch/run/spec.json", "--socket", "/run/driftwatch-handoff/reporter.sock"}, c.Command)
	require.Equal(t, c.Image, rc.Image)
	require.Equal(t, c.ImagePullPolicy, rc.ImagePullPolicy)
	require.Equal(t, []string{"driftwatch", "runner", "report", "--spec", "/etc/driftwatch/run/spec.json", "--socket", "/run/driftwatch-handoff/reporter.sock"}, rc.Command)
	for _, ctr := range ps.Containers {
		require.Empty(t, ctr.EnvFrom)
		for _, e := range ctr.Env {
			require.Nil(t, e.ValueFrom, "credentials are files, never env: %s", e.Name)
		}
		sc := ctr.SecurityContext
		require.True(t, *sc.RunAsNonRoot, ctr.Name)
		require.True(t, *sc.ReadOnlyRootFilesystem, ctr.Name)
		require.False(t, *sc.AllowPrivilegeEscalation, ctr.Name)
		require.False(t, *sc.Privileged, ctr.Name)
		require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, ctr.Name)
		require.Empty(t, sc.Capabilities.Add, ctr.Name)
		require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type, ctr.Name)
		require.Equal(t, corev1.TerminationMessageFallbackToLogsOnError, ctr.TerminationMessagePolicy, ctr.Name)
	}
	// Different users: no process of the run (Terraform's uid) can
	// signal, trace or share files by owner with the reporter.
	require.Equal(t, int64(65532), *c.SecurityContext.RunAsUser)
	require.Equal(t, int64(65532), *c.SecurityContext.RunAsGroup)
	require.Equal(t, int64(65533), *rc.SecurityContext.RunAsUser)
	require.Equal(t, int64(65533), *rc.SecurityContext.RunAsGroup)
	require.NotEqual(t, *c.SecurityContext.RunAsUser, *rc.SecurityContext.RunAsUser)
	require.Equal(t, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": resource.MustParse("250m"), "memory": resource.MustParse("512Mi"), "ephemeral-storage": resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("4Gi"), "ephemeral-storage": resource.MustParse("8Gi")},
	}, c.Resources)
	require.NotEmpty(t, rc.Resources.Limits.Memory(), "the reporter is bounded too")

	// Writable: only the emptyDirs. Read-only: the spec, the projected
	// credentials (0440 for the fsGroup) and, in the reporter only, the
	// token.
	require.Equal(t, []corev1.VolumeMount{
		{Name: "run", MountPath: "/etc/driftwatch/run", ReadOnly: true},
		{Name: "handoff", MountPath: "/run/driftwatch-handoff"},
		{Name: "work", MountPath: "/work"},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "credentials", MountPath: "/etc/driftwatch/secrets", ReadOnly: true},
	}, c.VolumeMounts)
	require.Equal(t, []corev1.VolumeMount{
		{Name: "run", MountPath: "/etc/driftwatch/run", ReadOnly: true},
		{Name: "token", MountPath: "/etc/driftwatch/token", ReadOnly: true},
		{Name: "handoff", MountPath: "/run/driftwatch-handoff"},
	}, rc.VolumeMounts)
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	require.Len(t, vols, 6)
	require.Equal(t, &corev1.SecretVolumeSource{SecretName: p.name, DefaultMode: ptrTo[int32](0o440),
		Items: []corev1.KeyToPath{{Key: "spec.json", Path: "spec.json"}}}, vols["run"].Secret, "the spec, not the token")
	require.Equal(t, &corev1.SecretVolumeSource{SecretName: p.name, DefaultMode: ptrTo[int32](0o400),
		Items: []corev1.KeyToPath{{Key: "token", Path: "token", Mode: ptrTo[int32](0o400)}}}, vols["token"].Secret)
	require.NotNil(t, vols["handoff"].EmptyDir)
	require.NotNil(t, vols["work"].EmptyDir)
	require.NotNil(t, vols["tmp"].EmptyDir)
	proj := vols["credentials"].Projected
	require.Equal(t, int32(0o440), *proj.DefaultMode)
	require.Equal(t, []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "aws"}, Items: []corev1.KeyToPath{{Key: "id", Path: "AWS_ACCESS_KEY_ID"}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "aws"}, Items: []corev1.KeyToPath{{Key: "secret", Path: "AWS_SECRET_ACCESS_KEY"}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "git"}, Items: []corev1.KeyToPath{{Key: "token", Path: "git-credentials"}}}},
	}, proj.Sources)
	require.Equal(t, "/etc/driftwatch/token/token", p.spec.TokenFile, "the spec names the reporter's token file")

	t.Run("no credentials", func(t *testing.T) {
		p, err := prepare(cfg, terraform.Request{RunID: "r", Workspace: "dev", Source: terraform.Source{Path: "/m"}}, testNow)
		require.NoError(t, err)
		job := buildJob(cfg, p, testHash())
		golden(t, "job-minimal.golden.json", job)
		for _, v := range job.Spec.Template.Spec.Volumes {
			require.NotEqual(t, "credentials", v.Name)
		}
	})
}
