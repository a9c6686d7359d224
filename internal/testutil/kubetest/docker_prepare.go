//go:build linux

package kubetest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// prepare materialises pod's volumes under dir and builds each container's
// docker run arguments.
func (k *DockerKubelet) prepare(ctx context.Context, pod *corev1.Pod, dir string, memDirs *[]string) ([]*dockerContainer, error) {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	objs := &objects{cs: k.cs, ns: pod.Namespace, secrets: map[string]*corev1.Secret{}, cms: map[string]*corev1.ConfigMap{}}
	// Volumes, once per pod (a kubelet mounts each once per pod).
	hostOf := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		var host string
		switch {
		case v.EmptyDir != nil:
			if v.EmptyDir.Medium == corev1.StorageMediumMemory {
				d, err := os.MkdirTemp("/dev/shm", "kubetest-")
				if err != nil {
					return nil, err
				}
				*memDirs = append(*memDirs, d)
				host = d
			} else {
				host = filepath.Join(dir, "volumes", v.Name)
				if err := os.MkdirAll(host, 0o700); err != nil {
					return nil, err
				}
			}
			// The kubelet makes an emptyDir 0777, and with an fsGroup
			// group-owned by it, setgid.
			mode := fs.FileMode(0o777)
			if psc.FSGroup != nil {
				if err := os.Chown(host, -1, int(*psc.FSGroup)); err != nil {
					return nil, err
				}
				mode |= fs.ModeSetgid
			}
			if err := os.Chmod(host, mode); err != nil {
				return nil, err
			}
		case v.Secret != nil, v.ConfigMap != nil, v.Projected != nil:
			host = filepath.Join(dir, "volumes", v.Name)
			if err := k.materialise(ctx, pod, objs, v, host, psc.FSGroup); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		default:
			return nil, refuse("volume %s: only emptyDir, secret, configMap and projected volumes are honoured", v.Name)
		}
		hostOf[v.Name] = host
	}

	imageUser := map[string]string{}
	var out []*dockerContainer
	for i, spec := range pod.Spec.Containers {
		name := fmt.Sprintf("kt-%s-%s-%s", k.id, nameRE.ReplaceAllString(pod.Name, "-"), nameRE.ReplaceAllString(spec.Name, "-"))
		if len(name) > 200 {
			name = name[:200]
		}
		name += fmt.Sprintf("-%d-%s", i, shortUID(string(pod.UID)))
		c := &dockerContainer{spec: spec, name: name}
		args := []string{"run", "-d", "--name", name,
			"--label", labelTest + "=" + k.id, "--label", labelName + "=" + k.t.Name(),
			"--label", labelPod + "=" + pod.Namespace + "/" + pod.Name,
			"--network", "host", "--init=false",
		}
		sc := spec.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		// The user: the container's, else the pod's, else the image's.
		uid, gid := sc.RunAsUser, sc.RunAsGroup
		if uid == nil {
			uid = psc.RunAsUser
		}
		if gid == nil {
			gid = psc.RunAsGroup
		}
		nonRoot := sc.RunAsNonRoot
		if nonRoot == nil {
			nonRoot = psc.RunAsNonRoot
		}
		effUID := int64(-1)
		if uid != nil {
			effUID = *uid
		} else {
			u, ok := imageUser[spec.Image]
			if !ok {
				b, err := exec.CommandContext(ctx, k.env.CLI, "image", "inspect", "--format", "{{.Config.User}}", spec.Image).Output()
				if err != nil {
					return nil, fmt.Errorf("container %s: image %s: %w", spec.Name, spec.Image, err)
				}
				u = strings.TrimSpace(string(b))
				imageUser[spec.Image] = u
			}
			user, _, _ := strings.Cut(u, ":")
			if user == "" {
				effUID = 0
			} else if n, err := strconv.ParseInt(user, 10, 64); err == nil {
				effUID = n
			} else if nonRoot != nil && *nonRoot {
				return nil, fmt.Errorf("CreateContainerConfigError: container %s: image has non-numeric user (%s), cannot verify user is non-root", spec.Name, user)
			}
		}
		if nonRoot != nil && *nonRoot && effUID == 0 {
			return nil, fmt.Errorf("CreateContainerConfigError: container %s: container has runAsNonRoot and image will run as root", spec.Name)
		}
		if uid != nil {
			u := strconv.FormatInt(*uid, 10)
			if gid != nil {
				u += ":" + strconv.FormatInt(*gid, 10)
			}
			args = append(args, "--user", u)
		} else if gid != nil {
			return nil, refuse("container %s: runAsGroup without runAsUser", spec.Name)
		}
		if psc.FSGroup != nil {
			args = append(args, "--group-add", strconv.FormatInt(*psc.FSGroup, 10))
		}
		for _, g := range psc.SupplementalGroups {
			args = append(args, "--group-add", strconv.FormatInt(g, 10))
		}
		if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			args = append(args, "--read-only")
		}
		if sc.Capabilities != nil {
			for _, cp := range sc.Capabilities.Drop {
				args = append(args, "--cap-drop", string(cp))
			}
			for _, cp := range sc.Capabilities.Add {
				args = append(args, "--cap-add", string(cp))
			}
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			args = append(args, "--security-opt", "no-new-privileges")
		}
		// Seccomp: RuntimeDefault is docker's default profile; a pod
		// without a profile runs Unconfined in Kubernetes (kubelet's
		// default), and Unconfined is asked of docker explicitly.
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type == corev1.SeccompProfileTypeUnconfined {
			args = append(args, "--security-opt", "seccomp=unconfined")
		}
		if spec.WorkingDir != "" {
			args = append(args, "--workdir", spec.WorkingDir)
		}

		env, err := k.containerEnv(ctx, pod, spec, objs)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", spec.Name, err)
		}
		for _, e := range env {
			args = append(args, "--env", e)
		}

		for _, m := range spec.VolumeMounts {
			host, ok := hostOf[m.Name]
			if !ok {
				return nil, fmt.Errorf("container %s mounts unknown volume %q", spec.Name, m.Name)
			}
			opt := "type=bind,source=" + host + ",target=" + m.MountPath
			// Secret, ConfigMap and projected volumes are read-only
			// whatever the mount says (the kubelet mounts them so).
			if m.ReadOnly || isAtomic(pod, m.Name) {
				opt += ",readonly"
			}
			args = append(args, "--mount", opt)
		}

		// The termination message: a file the container may write.
		tp := spec.TerminationMessagePath
		if tp == "" {
			tp = corev1.TerminationMessagePathDefault
		}
		c.termFile = filepath.Join(dir, "termination", spec.Name)
		if err := os.MkdirAll(filepath.Dir(c.termFile), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(c.termFile, nil, 0o666); err != nil {
			return nil, err
		}
		if err := os.Chmod(c.termFile, 0o666); err != nil {
			return nil, err
		}
		args = append(args, "--mount", "type=bind,source="+c.termFile+",target="+tp)

		// Command replaces the image's entrypoint (and its default
		// arguments); args alone replace its default arguments.
		cmdArgs := expandAll(spec.Args, env)
		if len(spec.Command) > 0 {
			command := expandAll(spec.Command, env)
			args = append(args, "--entrypoint", command[0], spec.Image)
			args = append(args, command[1:]...)
		} else {
			args = append(args, spec.Image)
		}
		args = append(args, cmdArgs...)
		c.args = args
		out = append(out, c)
	}
	return out, nil
}

func shortUID(uid string) string {
	uid = strings.ReplaceAll(uid, "-", "")
	if len(uid) > 8 {
		return uid[:8]
	}
	return uid
}

func isAtomic(pod *corev1.Pod, volume string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume {
			return v.Secret != nil || v.ConfigMap != nil || v.Projected != nil
		}
	}
	return false
}
