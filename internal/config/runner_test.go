package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner/kube"
)

func TestRunnerKubernetes(t *testing.T) {
	net := mustAbs(t, "testdata/net")
	cfg, err := Load("/etc/dw/driftwatch.yaml", []byte(`
workspaces:
  - name: a
    source: { path: `+net+` }
runner:
  mode: kubernetes
  kubernetes:
    kubeconfig: kube/config
    namespace: runs
    image: ghcr.io/driftwatch/driftwatch:v1
    image_pull_policy: Always
    image_pull_secrets: [regcred]
    command: [/bin/driftwatch]
    service_account: plan
    callback_url: http://driftwatch.dw.svc:8080
    resources: { requests: { cpu: 100m }, limits: { memory: 1Gi } }
    default_timeout: 30m
    startup_allowance: 1m
    ttl_after_finished: 2h
    cli_config_file: /etc/tf/cli.tfrc
    events: true
    workspaces:
      a:
        secret_env: { AWS_SECRET_ACCESS_KEY: { secret: aws, key: secret } }
        git_credentials: { secret: git, key: token }
        resources: { limits: { memory: 4Gi } }
  leader_election: { enabled: true, lease_name: dw, lease_duration: 6s, renew_deadline: 4s, retry_period: 1s }
`))
	require.NoError(t, err)
	require.Equal(t, "/etc/dw/kube/config", cfg.Runner.Kubernetes.Kubeconfig)
	require.Equal(t, DefaultCallbackListen, cfg.Runner.Kubernetes.CallbackListen)
	k := cfg.Runner.Kubernetes.Kube()
	require.NoError(t, k.Validate())
	require.Equal(t, "runs", k.Namespace)
	require.Equal(t, 30*time.Minute, k.DefaultTimeout)
	require.Equal(t, kube.SecretKeyRef{Name: "aws", Key: "secret"}, k.Workspaces["a"].SecretEnv["AWS_SECRET_ACCESS_KEY"])
	require.Equal(t, &kube.SecretKeyRef{Name: "git", Key: "token"}, k.Workspaces["a"].GitCredentials)
	require.Equal(t, "runs", cfg.Runner.LeaseNamespace())
	lease, renew, retry := cfg.Runner.LeaderElection.Timings()
	require.Equal(t, []time.Duration{6 * time.Second, 4 * time.Second, time.Second}, []time.Duration{lease, renew, retry})
}

func TestRunnerAPILimits(t *testing.T) {
	net := mustAbs(t, "testdata/net")
	ws := "workspaces:\n  - name: a\n    source: { path: " + net + " }\n"
	load := func(limits string) *RunnerKubernetes {
		cfg, err := Load("/tmp/x.yaml", []byte("runner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8081'"+limits+" }\n"+ws))
		require.NoError(t, err)
		return cfg.Runner.Kubernetes
	}
	k := load("")
	require.Equal(t, [2]float64{DefaultAPIQPS, DefaultAPIBurst}, [2]float64{float64(k.APIQPS), float64(k.APIBurst)})
	k = load(", api_qps: 200")
	require.Equal(t, [2]float64{200, 200}, [2]float64{float64(k.APIQPS), float64(k.APIBurst)}, "the burst is at least the rate")
	k = load(", api_qps: 10, api_burst: 30")
	require.Equal(t, [2]float64{10, 30}, [2]float64{float64(k.APIQPS), float64(k.APIBurst)})
}

func TestRunnerInvalid(t *testing.T) {
	net := mustAbs(t, "testdata/net")
	ws := "workspaces:\n  - name: a\n    source: { path: " + net + " }\n"
	cases := map[string]struct{ yaml, want string }{
		"mode":     {"runner: { mode: pods }\n", `x.yaml:1: runner.mode: unknown mode "pods" (use local or kubernetes)`},
		"no block": {"runner: { mode: kubernetes }\n", `runner.kubernetes: required when runner.mode is kubernetes`},
		"required": {"runner:\n  mode: kubernetes\n  kubernetes: { image: x }\n", `x.yaml:3: runner.kubernetes.namespace: is required`},
		"unknown ws": {"runner:\n  mode: kubernetes\n  kubernetes:\n    namespace: r\n    image: x\n    callback_url: http://d:8080\n    workspaces: { b: {} }\n",
			`runner.kubernetes.workspaces.b: no workspace "b" is configured`},
		"unknown key": {"runner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8080', nope: 1 }\n", `runner.kubernetes.nope`},
		"callback listen": {"runner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8081', callback_listen: '8081' }\n",
			`x.yaml:3: runner.kubernetes.callback_listen: "8081" is not host:port`},
		"callback listen port": {"runner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8081', callback_listen: ':http' }\n",
			`runner.kubernetes.callback_listen: ":http": port "http" must be a number from 1 to 65535`},
		"callback on the server's port": {"server: { listen: '0.0.0.0:8080' }\nrunner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8080', callback_listen: ':8080' }\n",
			`runner.kubernetes.callback_listen: ":8080" must use another port than server.listen ("0.0.0.0:8080"): run pods may reach the callback port only`},
		"negative qps": {"runner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8081', api_qps: -1 }\n",
			`x.yaml:3: runner.kubernetes.api_qps: must not be negative, got -1`},
		"burst below qps": {"runner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8081', api_qps: 80, api_burst: 20 }\n",
			`x.yaml:3: runner.kubernetes.api_burst: must be at least api_qps (80), got 20`},
		"le local": {"runner: { leader_election: { enabled: true, lease_name: x } }\n", `runner.leader_election.enabled: leader election needs runner.mode kubernetes`},
		"le timings": {"runner:\n  mode: kubernetes\n  kubernetes: { namespace: r, image: x, callback_url: 'http://d:8080' }\n  leader_election: { enabled: true, lease_name: x, lease_duration: 5s, renew_deadline: 6s }\n",
			`runner.leader_election.renew_deadline: must be shorter than lease_duration (5s)`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load("/tmp/x.yaml", []byte(c.yaml+ws))
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// The runner mode defaults to local.
func TestRunnerEffectiveMode(t *testing.T) {
	require.Equal(t, RunnerModeLocal, Runner{}.EffectiveMode())
	require.Equal(t, RunnerModeLocal, Runner{Mode: RunnerModeLocal}.EffectiveMode())
	require.Equal(t, RunnerModeKubernetes, Runner{Mode: RunnerModeKubernetes}.EffectiveMode())
}

// The callback URL is the kubernetes runner's, and none in local mode.
func TestRunnerCallbackURL(t *testing.T) {
	k := &RunnerKubernetes{}
	k.CallbackURL = "http://driftwatch.dw.svc:8080"
	require.Equal(t, "http://driftwatch.dw.svc:8080", Runner{Mode: RunnerModeKubernetes, Kubernetes: k}.CallbackURL())
	require.Empty(t, Runner{Mode: RunnerModeKubernetes}.CallbackURL())
	require.Empty(t, Runner{Kubernetes: k}.CallbackURL(), "local mode")
}
