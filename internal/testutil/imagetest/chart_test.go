package imagetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// envKubeBinDir names the directory holding helm (hack/provision-k8s.sh,
// `make kube-tools`; the same variable as internal/testutil/kubetest's).
const envKubeBinDir = "DRIFTWATCH_KUBE_BIN_DIR"

// chartPod is the daemon's pod as the chart renders it: the ConfigMap's
// config file and the Deployment's replicas and one container.
type chartPod struct {
	config    map[string]any // the ConfigMap's driftwatch.yaml
	replicas  int
	container chartContainer
	volumes   map[string]chartVolume // by name
}

type chartContainer struct {
	Args []string `yaml:"args"`
	Env  []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom struct {
			FieldRef struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  chartProbe `yaml:"livenessProbe"`
	ReadinessProbe chartProbe `yaml:"readinessProbe"`
	Security       struct {
		ReadOnlyRootFilesystem   bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type chartProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type chartVolume struct {
	Name      string         `yaml:"name"`
	ConfigMap map[string]any `yaml:"configMap"`
	Secret    map[string]any `yaml:"secret"`
	EmptyDir  map[string]any `yaml:"emptyDir"`
}

// renderChart runs `helm template` on charts/driftwatch (release and
// namespace driftwatch) with values, and returns the daemon's pod.
func renderChart(t *testing.T, values ...string) chartPod {
	t.Helper()
	dir := os.Getenv(envKubeBinDir)
	if dir == "" {
		tftest.Unavailable(t, envKubeBinDir+" not set: helm renders the chart; run `make kube-tools` and export its KUBE_BIN_DIR (make test does)")
	}
	helm := filepath.Join(dir, "helm")
	if _, err := os.Stat(helm); err != nil {
		tftest.Unavailable(t, "no helm in "+envKubeBinDir+"="+dir+"; run `make kube-tools`")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := []string{"template", "driftwatch", filepath.Join(repoRoot(t), "charts", "driftwatch"), "--namespace", "driftwatch"}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	cmd := exec.CommandContext(ctx, helm, args...)
	home := t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "HELM_CACHE_HOME=" + home + "/cache",
		"HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "helm %v: %s", args, stderr.String())

	var pod chartPod
	dec := yaml.NewDecoder(&stdout)
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
			Spec struct {
				Replicas int `yaml:"replicas"`
				Template struct {
					Spec struct {
						Containers []chartContainer `yaml:"containers"`
						Volumes    []chartVolume    `yaml:"volumes"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch doc.Kind {
		case "ConfigMap":
			if cfg, ok := doc.Data["driftwatch.yaml"]; ok {
				require.NoError(t, yaml.Unmarshal([]byte(cfg), &pod.config))
			}
		case "Deployment":
			require.Len(t, doc.Spec.Template.Spec.Containers, 1, "the Deployment's containers")
			pod.replicas = doc.Spec.Replicas
			pod.container = doc.Spec.Template.Spec.Containers[0]
			pod.volumes = map[string]chartVolume{}
			for _, v := range doc.Spec.Template.Spec.Volumes {
				pod.volumes[v.Name] = v
			}
		}
	}
	require.NotNil(t, pod.config, "no ConfigMap with driftwatch.yaml in the rendered chart")
	require.NotNil(t, pod.volumes, "no Deployment in the rendered chart")
	return pod
}
