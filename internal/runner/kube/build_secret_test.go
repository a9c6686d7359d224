package kube

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// TestTokenOnlyInReporter: of a run pod's containers, only the reporter
// can read the run's result token; the runner, which runs Terraform and
// so any module's code, mounts no volume that holds it. (Pod-level fsGroup
// makes every Secret file group-readable by a group both containers have,
// so the mounts are the boundary.) Checked for detections and
// remediations, with and without credentials.
func TestTokenOnlyInReporter(t *testing.T) {
	cfg := testConfig().withDefaults()
	full, err := prepare(cfg, testRequest(), testNow)
	require.NoError(t, err)
	minimal, err := prepare(cfg, terraform.Request{RunID: "r", Workspace: "dev", Source: terraform.Source{Path: "/m"}}, testNow)
	require.NoError(t, err)
	rem := full
	a, approved := testApplier()
	rem.remediate(cfg, remote.RemediationOf(a, approved))
	for name, p := range map[string]runPlan{"detection": full, "minimal": minimal, "remediation": rem} {
		t.Run(name, func(t *testing.T) {
			job := buildJob(cfg, p, testHash())
			ps := job.Spec.Template.Spec
			// Which volumes hold the run Secret's token key?
			holdsToken := map[string]bool{}
			for _, v := range ps.Volumes {
				if s := v.Secret; s != nil && s.SecretName == job.Name {
					holdsToken[v.Name] = len(s.Items) == 0 || hasKey(s.Items, "token")
				}
				if pr := v.Projected; pr != nil {
					for _, src := range pr.Sources {
						if s := src.Secret; s != nil && s.Name == job.Name && (len(s.Items) == 0 || hasKey(s.Items, "token")) {
							holdsToken[v.Name] = true
						}
					}
				}
			}
			var readers []string
			uids := map[string]int64{}
			for _, c := range append(append([]corev1.Container{}, ps.InitContainers...), ps.Containers...) {
				uids[c.Name] = *c.SecurityContext.RunAsUser
				for _, m := range c.VolumeMounts {
					if holdsToken[m.Name] {
						readers = append(readers, c.Name+":"+m.MountPath)
					}
				}
			}
			require.Equal(t, []string{"reporter:/etc/driftwatch/token"}, readers)
			require.NotEqual(t, uids["runner"], uids["reporter"])
			for _, v := range ps.Volumes {
				if v.Name == "token" {
					require.Equal(t, int32(0o400), *v.Secret.Items[0].Mode, "owner-only, as far as a Secret volume goes")
				}
			}
		})
	}
}

func hasKey(items []corev1.KeyToPath, key string) bool {
	for _, it := range items {
		if it.Key == key {
			return true
		}
	}
	return false
}

func TestBuildSecret(t *testing.T) {
	cfg := testConfig().withDefaults()
	p, err := prepare(cfg, testRequest(), testNow)
	require.NoError(t, err)
	job := buildJob(cfg, p, testHash())
	job.UID = "0b7c3a52-1111-2222-3333-444455556666" // as the API server assigns
	sec, err := buildSecret(job, p.spec, "test-token")
	require.NoError(t, err)
	// The golden file shows the data as text (StringData) to be readable.
	view := sec.DeepCopy()
	view.StringData = map[string]string{}
	for k, v := range view.Data {
		view.StringData[k] = string(v)
	}
	view.Data = nil
	golden(t, "secret.golden.json", view)

	require.Equal(t, job.Name, sec.Name)
	require.Equal(t, job.Namespace, sec.Namespace)
	require.Equal(t, job.Labels, sec.Labels)
	require.True(t, *sec.Immutable)
	require.Equal(t, corev1.SecretTypeOpaque, sec.Type)
	require.Equal(t, []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID}}, sec.OwnerReferences)
	require.Equal(t, "test-token", string(sec.Data["token"]))
	spec, err := remote.DecodeSpec(strings.NewReader(string(sec.Data["spec.json"])))
	require.NoError(t, err)
	if d := cmp.Diff(p.spec, *spec); d != "" {
		t.Fatalf("spec in the secret (-want +got):\n%s", d)
	}
	// The daemon's own paths stay home.
	for _, daemonPath := range []string{"/home/daemon", "/var/cache/driftwatch", "/var/lib/driftwatch", "/daemon/path"} {
		require.NotContains(t, string(sec.Data["spec.json"]), daemonPath)
	}
	require.NotContains(t, string(sec.Data["spec.json"]), "test-token", "the spec holds no token")
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, testConfig().Validate())
	bad := Config{
		Namespace:       "Bad_NS",
		ImagePullPolicy: "Sometimes",
		ServiceAccount:  "UPPER",
		CallbackURL:     "driftwatch:8080",
		DefaultTimeout:  -time.Second,
		Resources:       Resources{Limits: map[string]string{"memory": "lots"}},
		Workspaces: map[string]Workspace{"w": {
			SecretEnv:      map[string]SecretKeyRef{"1BAD": {Name: "s", Key: "k"}, "OK": {Name: "", Key: "k"}},
			GitCredentials: &SecretKeyRef{Name: "g", Key: "bad/key"},
		}},
	}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`namespace "Bad_NS"`,
		"image is required",
		`image_pull_policy "Sometimes"`,
		`service_account "UPPER"`,
		`callback_url "driftwatch:8080" must be an absolute http(s) URL`,
		"default_timeout must not be negative",
		`resources.limits.memory: "lots"`,
		`workspaces.w.secret_env: "1BAD" is not an environment variable name`,
		`workspaces.w.secret_env.OK: secret name ""`,
		`workspaces.w.git_credentials: secret key "bad/key"`,
	} {
		require.ErrorContains(t, err, want)
	}
	require.EqualError(t, (&Config{}).Validate(), "namespace is required\nimage is required\ncallback_url is required")
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func ptrTo[T any](v T) *T { return &v }
