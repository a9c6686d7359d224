//go:build linux

package kubetest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// containerEnv is the container's environment as the kubelet builds it: the
// master service's variables (always, with the host's address of the test
// API server, so in-cluster configuration works from the host's network),
// the namespace's services (enableServiceLinks), envFrom, then env
// (valueFrom resolved, $(VAR) expanded).
func (k *DockerKubelet) containerEnv(ctx context.Context, pod *corev1.Pod, spec corev1.Container, objs *objects) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(n, v string) {
		if _, ok := vals[n]; !ok {
			order = append(order, n)
		}
		vals[n] = v
	}
	port := k.server[strings.LastIndex(k.server, ":")+1:]
	if links := pod.Spec.EnableServiceLinks; links == nil || *links {
		svcs, err := k.cs.CoreV1().Services(pod.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for _, s := range svcs.Items {
			if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
				continue
			}
			n := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
			p := s.Spec.Ports[0]
			set(n+"_SERVICE_HOST", s.Spec.ClusterIP)
			set(n+"_SERVICE_PORT", strconv.Itoa(int(p.Port)))
			for _, sp := range s.Spec.Ports {
				if sp.Name != "" {
					set(n+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_")), strconv.Itoa(int(sp.Port)))
				}
				proto := strings.ToLower(string(sp.Protocol))
				if proto == "" {
					proto = "tcp"
				}
				pp := n + "_PORT_" + strconv.Itoa(int(sp.Port)) + "_" + strings.ToUpper(proto)
				set(pp, proto+"://"+s.Spec.ClusterIP+":"+strconv.Itoa(int(sp.Port)))
				set(pp+"_PROTO", proto)
				set(pp+"_PORT", strconv.Itoa(int(sp.Port)))
				set(pp+"_ADDR", s.Spec.ClusterIP)
			}
			set(n+"_PORT", strings.ToLower(string(p.Protocol))+"://"+s.Spec.ClusterIP+":"+strconv.Itoa(int(p.Port)))
		}
	}
	// The "kubernetes" Service, as reachable here: the API server on the
	// host's loopback.
	set("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	set("KUBERNETES_SERVICE_PORT", port)
	set("KUBERNETES_SERVICE_PORT_HTTPS", port)
	set("KUBERNETES_PORT", "tcp://127.0.0.1:"+port)
	set("KUBERNETES_PORT_"+port+"_TCP", "tcp://127.0.0.1:"+port)
	set("KUBERNETES_PORT_"+port+"_TCP_PROTO", "tcp")
	set("KUBERNETES_PORT_"+port+"_TCP_PORT", port)
	set("KUBERNETES_PORT_"+port+"_TCP_ADDR", "127.0.0.1")

	for _, ef := range spec.EnvFrom {
		var data map[string]string
		switch {
		case ef.SecretRef != nil:
			s, err := objs.secret(ctx, ef.SecretRef.Name, ef.SecretRef.Optional)
			if err != nil {
				return nil, err
			}
			if s != nil {
				data = map[string]string{}
				for k, v := range s.Data {
					data[k] = string(v)
				}
			}
		case ef.ConfigMapRef != nil:
			cm, err := objs.configMap(ctx, ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional)
			if err != nil {
				return nil, err
			}
			if cm != nil {
				data = cm.Data
			}
		}
		for _, key := range sortedKeys(data) {
			set(ef.Prefix+key, data[key])
		}
	}
	for _, e := range spec.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			switch {
			case f.SecretKeyRef != nil:
				s, err := objs.secret(ctx, f.SecretKeyRef.Name, f.SecretKeyRef.Optional)
				if err != nil {
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
				b, ok := []byte(nil), false
				if s != nil {
					b, ok = s.Data[f.SecretKeyRef.Key]
				}
				if !ok {
					if f.SecretKeyRef.Optional != nil && *f.SecretKeyRef.Optional {
						continue
					}
					return nil, fmt.Errorf("env %s: secret %s has no key %q", e.Name, f.SecretKeyRef.Name, f.SecretKeyRef.Key)
				}
				v = string(b)
			case f.ConfigMapKeyRef != nil:
				cm, err := objs.configMap(ctx, f.ConfigMapKeyRef.Name, f.ConfigMapKeyRef.Optional)
				if err != nil {
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
				s, ok := "", false
				if cm != nil {
					s, ok = cm.Data[f.ConfigMapKeyRef.Key]
				}
				if !ok {
					if f.ConfigMapKeyRef.Optional != nil && *f.ConfigMapKeyRef.Optional {
						continue
					}
					return nil, fmt.Errorf("env %s: configmap %s has no key %q", e.Name, f.ConfigMapKeyRef.Name, f.ConfigMapKeyRef.Key)
				}
				v = s
			case f.FieldRef != nil:
				v = fieldValue(pod, f.FieldRef.FieldPath)
			}
		} else {
			v = expand(v, vals)
		}
		set(e.Name, v)
	}
	out := make([]string, 0, len(order))
	for _, n := range order {
		out = append(out, n+"="+vals[n])
	}
	return out, nil
}

// expand replaces $(VAR) by VAR's value when it is defined and $$ by $, as
// the kubelet expands env values, command and args.
func expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if j := strings.IndexByte(s[i+2:], ')'); j >= 0 {
				name := s[i+2 : i+2+j]
				if v, ok := vals[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+j])
				}
				i += 2 + j
				continue
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(ss, env []string) []string {
	vals := map[string]string{}
	for _, e := range env {
		n, v, _ := strings.Cut(e, "=")
		vals[n] = v
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = expand(s, vals)
	}
	return out
}

// objects reads a pod's Secrets and ConfigMaps, waiting a while for one
// that is not there yet (as a kubelet retries a mount).
type objects struct {
	cs      kubernetes.Interface
	ns      string
	secrets map[string]*corev1.Secret
	cms     map[string]*corev1.ConfigMap
}

func getWaiting[T any](ctx context.Context, optional *bool, get func() (T, error)) (T, bool, error) {
	var zero T
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := get()
		if err == nil {
			return v, true, nil
		}
		if !apierrors.IsNotFound(err) {
			return zero, false, err
		}
		if optional != nil && *optional {
			return zero, false, nil
		}
		if time.Now().After(deadline) {
			return zero, false, err
		}
		select {
		case <-ctx.Done():
			return zero, false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (o *objects) secret(ctx context.Context, name string, optional *bool) (*corev1.Secret, error) {
	return cachedGet(ctx, o.secrets, "secret", name, optional, func() (*corev1.Secret, error) {
		return o.cs.CoreV1().Secrets(o.ns).Get(ctx, name, metav1.GetOptions{})
	})
}

func (o *objects) configMap(ctx context.Context, name string, optional *bool) (*corev1.ConfigMap, error) {
	return cachedGet(ctx, o.cms, "configmap", name, optional, func() (*corev1.ConfigMap, error) {
		return o.cs.CoreV1().ConfigMaps(o.ns).Get(ctx, name, metav1.GetOptions{})
	})
}

// cachedGet is getWaiting for the object name of kind, remembered in cache
// (nil: an optional object that does not exist).
func cachedGet[T any](ctx context.Context, cache map[string]*T, kind, name string, optional *bool, get func() (*T, error)) (*T, error) {
	if v, ok := cache[name]; ok {
		return v, nil
	}
	v, ok, err := getWaiting(ctx, optional, get)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	if !ok {
		v = nil
	}
	cache[name] = v
	return v, nil
}

// file is one file of a Secret, ConfigMap or projected volume.
type file struct {
	path string
	data []byte
	mode *int32
}
