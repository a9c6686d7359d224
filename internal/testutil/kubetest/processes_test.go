//go:build linux

package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestProcesses plays a two-container pod without a cluster: each
// container sees only its own mounts (a Secret volume's items only, with
// their modes), the emptyDir they share is one directory, paths in argv
// and env are mapped, and each container's exit is its own.
func TestProcesses(t *testing.T) {
	cs := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: "ns"},
		Data:       map[string][]byte{"spec": []byte("SPEC /shared/x"), "token": []byte("TOKEN")},
	})
	mode := func(m int32) *int32 { return &m }
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "spec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "run", Items: []corev1.KeyToPath{{Key: "spec", Path: "spec"}}, DefaultMode: mode(0o440)}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "run", Items: []corev1.KeyToPath{{Key: "token", Path: "token", Mode: mode(0o400)}}}}},
				{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{
				Name:    "writer",
				Command: []string{"sh", "-c", `cat "$1" > "$OUT"`, "sh", "/etc/token/token"},
				Env:     []corev1.EnvVar{{Name: "OUT", Value: "/shared/from-writer"}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "token", MountPath: "/etc/token", ReadOnly: true},
					{Name: "shared", MountPath: "/shared"},
				},
			}, {
				Name:                     "failer",
				Command:                  []string{"sh", "-c", "echo one; echo the last line; exit 3", "/etc/spec/spec"},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "spec", MountPath: "/etc/spec", ReadOnly: true},
					{Name: "shared", MountPath: "/shared"},
				},
			}},
		},
	}
	var views map[string]*Container
	var podDir string
	p := &Processes{
		Client: cs,
		Env:    []string{"PATH=" + os.Getenv("PATH")},
		Rewrite: func(c *Container, volume, file string, data []byte) ([]byte, error) {
			host, _ := c.Path("/shared/x")
			return []byte(strings.Replace(string(data), "/shared/x", host, 1)), nil
		},
		Check: func(_ *corev1.Pod, cs []*Container) error {
			views = map[string]*Container{}
			for _, c := range cs {
				views[c.Name] = c
			}
			return nil
		},
		Started: func(_ *corev1.Pod, dir string) { podDir = dir },
		Logf:    t.Logf,
	}
	var shared string
	p.Exec = func(ctx context.Context, c *Container) ContainerExit {
		// Look before the pod's directory goes: run the real process,
		// then inspect.
		e := runProcess(ctx, c, "p", t.Logf)
		if c.Name == "writer" {
			b, err := os.ReadFile(filepath.Join(podDir, "volumes", "shared", "from-writer"))
			require.NoError(t, err)
			shared = string(b)
		}
		return e
	}
	exits := p.Run(t.Context(), pod)
	require.Equal(t, map[string]ContainerExit{
		"writer": {ExitCode: 0},
		"failer": {ExitCode: 3, Message: "one\nthe last line"},
	}, exits)
	require.Equal(t, "TOKEN", shared, "the shared emptyDir is one directory")

	w, f := views["writer"], views["failer"]
	tok, ok := w.Path("/etc/token/token")
	require.True(t, ok)
	_, ok = f.Path("/etc/token/token")
	require.False(t, ok, "the failer does not mount the token")
	_, ok = w.Path("/etc/spec/spec")
	require.False(t, ok)
	sw, _ := w.Path("/shared/a")
	sf, _ := f.Path("/shared/a")
	require.Equal(t, sw, sf)
	require.NotContains(t, strings.Join(f.Argv, " "), "/etc/spec/spec", "argv mapped")
	require.Contains(t, w.Env, "OUT="+filepath.Dir(sw)+"/from-writer")
	require.True(t, strings.HasPrefix(tok, podDir))
	_, err := os.Stat(podDir)
	require.True(t, os.IsNotExist(err), "the pod's directory is removed")
}

// TestProcessesFileModes: items get their mode, or the volume's default.
func TestProcessesFileModes(t *testing.T) {
	cs := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
		Data:       map[string][]byte{"a": []byte("A"), "b": []byte("B")},
	})
	mode := func(m int32) *int32 { return &m }
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "s", Items: []corev1.KeyToPath{{Key: "a", Path: "a"}, {Key: "b", Path: "b", Mode: mode(0o400)}},
				DefaultMode: mode(0o440)}}}},
			Containers: []corev1.Container{{Name: "c", Command: []string{"true"},
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}},
		},
	}
	modes := map[string]os.FileMode{}
	p := &Processes{Client: cs, Exec: func(_ context.Context, c *Container) ContainerExit {
		for _, f := range []string{"a", "b"} {
			host, _ := c.Path("/v/" + f)
			st, err := os.Stat(host)
			require.NoError(t, err)
			modes[f] = st.Mode().Perm()
		}
		return ContainerExit{}
	}}
	require.Equal(t, map[string]ContainerExit{"c": {}}, p.Run(t.Context(), pod))
	require.Equal(t, map[string]os.FileMode{"a": 0o440, "b": 0o400}, modes)
}
