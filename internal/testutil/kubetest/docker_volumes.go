//go:build linux

package kubetest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// materialise writes the files of a Secret, ConfigMap or projected volume
// under host: directories 0755 and files of the asked mode (default 0644)
// owned by root; with an fsGroup, group-owned by it, files gaining group
// read and directories setgid and group read/search (the kubelet's
// SetVolumeOwnership of a read-only volume).
func (k *DockerKubelet) materialise(ctx context.Context, pod *corev1.Pod, objs *objects, v corev1.Volume, host string, fsGroup *int64) error {
	var files []file
	mode := int32(corev1.SecretVolumeSourceDefaultMode)
	keyed := func(data map[string][]byte, items []corev1.KeyToPath, what string) error {
		if len(items) == 0 {
			for _, key := range sortedKeys(data) {
				files = append(files, file{path: key, data: data[key]})
			}
			return nil
		}
		for _, it := range items {
			b, ok := data[it.Key]
			if !ok {
				return fmt.Errorf("%s has no key %q", what, it.Key)
			}
			files = append(files, file{path: it.Path, data: b, mode: it.Mode})
		}
		return nil
	}
	secretFiles := func(name string, items []corev1.KeyToPath, optional *bool) error {
		s, err := objs.secret(ctx, name, optional)
		if err != nil || s == nil {
			return err
		}
		return keyed(s.Data, items, "secret "+name)
	}
	cmFiles := func(name string, items []corev1.KeyToPath, optional *bool) error {
		if name == "kube-root-ca.crt" {
			if err := k.ensureRootCA(ctx, pod.Namespace); err != nil {
				return err
			}
		}
		c, err := objs.configMap(ctx, name, optional)
		if err != nil || c == nil {
			return err
		}
		data := map[string][]byte{}
		for key, val := range c.Data {
			data[key] = []byte(val)
		}
		maps := c.BinaryData
		for key, val := range maps {
			data[key] = val
		}
		return keyed(data, items, "configmap "+name)
	}
	switch {
	case v.Secret != nil:
		if v.Secret.DefaultMode != nil {
			mode = *v.Secret.DefaultMode
		}
		if err := secretFiles(v.Secret.SecretName, v.Secret.Items, v.Secret.Optional); err != nil {
			return err
		}
	case v.ConfigMap != nil:
		if v.ConfigMap.DefaultMode != nil {
			mode = *v.ConfigMap.DefaultMode
		}
		if err := cmFiles(v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional); err != nil {
			return err
		}
	case v.Projected != nil:
		if v.Projected.DefaultMode != nil {
			mode = *v.Projected.DefaultMode
		}
		for _, src := range v.Projected.Sources {
			var err error
			switch {
			case src.Secret != nil:
				err = secretFiles(src.Secret.Name, src.Secret.Items, src.Secret.Optional)
			case src.ConfigMap != nil:
				err = cmFiles(src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional)
			case src.ServiceAccountToken != nil:
				var tok string
				tok, err = k.token(ctx, pod, src.ServiceAccountToken)
				files = append(files, file{path: src.ServiceAccountToken.Path, data: []byte(tok)})
			case src.DownwardAPI != nil:
				for _, it := range src.DownwardAPI.Items {
					files = append(files, file{path: it.Path, data: []byte(fieldValue(pod, it.FieldRef.FieldPath)), mode: it.Mode})
				}
			default:
				err = refuse("a projected source other than secret, configMap, serviceAccountToken and downwardAPI")
			}
			if err != nil {
				return err
			}
		}
	}
	// The kubelet's atomic writer layout: the files in a timestamped
	// directory, "..data" a symlink to it, and each top-level name a
	// symlink into "..data" (what an update swaps at once). Code that
	// refuses symlinks, or lists the directory, sees what it would in a
	// cluster.
	payload := time.Now().UTC().Format("..2006_01_02_15_04_05.000000000")
	if err := os.MkdirAll(filepath.Join(host, payload), 0o755); err != nil {
		return err
	}
	top := map[string]bool{}
	for _, f := range files {
		clean := filepath.Clean(f.path)
		if f.path == "" || filepath.IsAbs(f.path) || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, "..") {
			return fmt.Errorf("bad item path %q", f.path)
		}
		m := mode
		if f.mode != nil {
			m = *f.mode
		}
		p := filepath.Join(host, payload, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			return err
		}
		fm := fs.FileMode(m) & fs.ModePerm
		if fsGroup != nil {
			fm |= 0o440
		}
		if err := os.Chmod(p, fm); err != nil {
			return err
		}
		first, _, _ := strings.Cut(clean, "/")
		top[first] = true
	}
	if err := os.Symlink(payload, filepath.Join(host, "..data")); err != nil {
		return err
	}
	for name := range top {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(host, name)); err != nil {
			return err
		}
	}
	// Ownership: root, and the fsGroup's group.
	return filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		gid := 0
		if fsGroup != nil {
			gid = int(*fsGroup)
		}
		if err := os.Lchown(p, 0, gid); err != nil {
			return err
		}
		if d.IsDir() {
			dm := fs.FileMode(0o755)
			if fsGroup != nil {
				dm |= fs.ModeSetgid | 0o550
			}
			return os.Chmod(p, dm)
		}
		return nil
	})
}

// token asks the TokenRequest API for a token of the pod's ServiceAccount,
// bound to the pod, as the kubelet does for a projected token.
func (k *DockerKubelet) token(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := k.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of service account %s: %w", sa, err)
	}
	return tr.Status.Token, nil
}

// ensureRootCA creates the namespace's kube-root-ca.crt ConfigMap with the
// API server's CA, which the root-ca-cert-publisher controller would: the
// test control plane does not run it.
func (k *DockerKubelet) ensureRootCA(ctx context.Context, ns string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns},
		Data:       map[string]string{"ca.crt": string(k.caPEM)},
	}
	_, err := k.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create kube-root-ca.crt: %w", err)
	}
	return nil
}
