//go:build linux

package kubetest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Fields of a pod the container kubelet honours (JSON paths, "[]" for
// every element of a list; a path covers everything under it). Anything
// else set in a pod refuses it. Some are accepted but have nothing to do
// here; why is said beside each.
var podFields = []string{
	"volumes[].name",
	"volumes[].secret.secretName", "volumes[].secret.items", "volumes[].secret.defaultMode", "volumes[].secret.optional",
	"volumes[].configMap.name", "volumes[].configMap.items", "volumes[].configMap.defaultMode", "volumes[].configMap.optional",
	"volumes[].emptyDir.medium",
	// Not enforced: a limit, like resources (a pod over it would be
	// evicted; no test relies on an eviction).
	"volumes[].emptyDir.sizeLimit",
	"volumes[].projected.defaultMode",
	"volumes[].projected.sources[].secret", "volumes[].projected.sources[].configMap",
	"volumes[].projected.sources[].serviceAccountToken",
	"volumes[].projected.sources[].downwardAPI.items[].path",
	"volumes[].projected.sources[].downwardAPI.items[].mode",
	"volumes[].projected.sources[].downwardAPI.items[].fieldRef.fieldPath",
	"volumes[].projected.sources[].downwardAPI.items[].fieldRef.apiVersion",
	"containers[]", // checked by containerFields
	"restartPolicy",
	"terminationGracePeriodSeconds",
	"activeDeadlineSeconds",
	// ClusterFirst (the default): there is no cluster DNS; with the host's
	// network the host's resolver answers. Other values are refused below.
	"dnsPolicy",
	// One node, no scheduler: nothing to schedule (the pod stays unbound).
	"schedulerName", "tolerations", "priority", "priorityClassName", "preemptionPolicy",
	"serviceAccountName", "serviceAccount", // the projected token's account
	// Acted upon by the ServiceAccount admission plugin (the token volume
	// is in the spec, or not).
	"automountServiceAccountToken",
	"enableServiceLinks",
	"imagePullSecrets", // images are local: nothing is pulled
	"shareProcessNamespace",
	"securityContext.runAsUser", "securityContext.runAsGroup", "securityContext.runAsNonRoot",
	"securityContext.fsGroup", "securityContext.fsGroupChangePolicy", "securityContext.supplementalGroups",
	"securityContext.seccompProfile.type",
}

// containerFields are the honoured fields of a container (see podFields).
var containerFields = append(append([]string{
	"name", "image", "command", "args", "workingDir",
	"env[].name", "env[].value",
	"env[].valueFrom.secretKeyRef", "env[].valueFrom.configMapKeyRef",
	"env[].valueFrom.fieldRef.fieldPath", "env[].valueFrom.fieldRef.apiVersion",
	"envFrom[].prefix", "envFrom[].secretRef", "envFrom[].configMapRef",
	"volumeMounts[].name", "volumeMounts[].mountPath", "volumeMounts[].readOnly",
	// Not enforced: docker's engine here has no cgroup limits to speak of,
	// and no test relies on a limit (an OOM kill would show as exit 137).
	"resources",
	// With the host's network a container port is only documentation.
	"ports",
	"imagePullPolicy", // images are local: nothing is pulled
	"terminationMessagePath", "terminationMessagePolicy",
	"securityContext.runAsUser", "securityContext.runAsGroup", "securityContext.runAsNonRoot",
	"securityContext.readOnlyRootFilesystem", "securityContext.allowPrivilegeEscalation",
	"securityContext.privileged", "securityContext.capabilities.drop", "securityContext.capabilities.add",
	"securityContext.seccompProfile.type", "securityContext.procMount",
}, probeFields("readinessProbe")...), probeFields("livenessProbe")...)

// unhonoured returns the JSON paths set in v that no path of known covers.
func unhonoured(v any, known []string) ([]string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	var leaves []string
	var walk func(path string, n any)
	walk = func(path string, n any) {
		switch n := n.(type) {
		case map[string]any:
			if len(n) == 0 && path != "" {
				leaves = append(leaves, path+"{}") // an empty object: emptyDir: {}
			}
			for k, v := range n {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, v)
			}
		case []any:
			if len(n) == 0 {
				leaves = append(leaves, path)
			}
			for _, v := range n {
				walk(path+"[]", v)
			}
		default:
			leaves = append(leaves, path)
		}
	}
	walk("", tree)
	covered := func(leaf string) bool {
		if obj, ok := strings.CutSuffix(leaf, "{}"); ok {
			// An empty object is honoured where any field of it is.
			for _, k := range known {
				if strings.HasPrefix(k, obj+".") {
					return true
				}
			}
			leaf = obj
		}
		for _, k := range known {
			if leaf == k || strings.HasPrefix(leaf, k+".") || strings.HasPrefix(leaf, k+"[]") {
				return true
			}
		}
		return false
	}
	var out []string
	for _, l := range leaves {
		if !covered(l) && !slicesContains(out, l) {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out, nil
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// refusal is a pod the container kubelet will not run as asked: a field
// it does not honour. It fails the test.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return &refusal{fmt.Sprintf(format, args...)} }

// check refuses a pod with a field, or a value, the container kubelet
// does not honour.
func check(pod *corev1.Pod) error {
	var errs []string
	spec := pod.Spec
	left, err := unhonoured(spec, podFields)
	if err != nil {
		return err
	}
	for _, l := range left {
		errs = append(errs, "spec."+l)
	}
	for _, c := range spec.Containers {
		left, err := unhonoured(c, containerFields)
		if err != nil {
			return err
		}
		for _, l := range left {
			errs = append(errs, "spec.containers["+c.Name+"]."+l)
		}
		if sc := c.SecurityContext; sc != nil {
			if sc.Privileged != nil && *sc.Privileged {
				errs = append(errs, "container "+c.Name+": privileged")
			}
			if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
				errs = append(errs, "container "+c.Name+": procMount "+string(*sc.ProcMount))
			}
			if sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost {
				errs = append(errs, "container "+c.Name+": seccomp Localhost")
			}
		}
		for _, e := range c.Env {
			if f := e.ValueFrom; f != nil && f.FieldRef != nil && !fieldPathOK(f.FieldRef.FieldPath) {
				errs = append(errs, "container "+c.Name+": env "+e.Name+": fieldRef "+f.FieldRef.FieldPath)
			}
		}
	}
	if spec.DNSPolicy != "" && spec.DNSPolicy != corev1.DNSClusterFirst && spec.DNSPolicy != corev1.DNSDefault {
		errs = append(errs, "dnsPolicy "+string(spec.DNSPolicy))
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace {
		errs = append(errs, "shareProcessNamespace")
	}
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeLocalhost {
		errs = append(errs, "pod seccomp Localhost")
	}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumDefault && v.EmptyDir.Medium != corev1.StorageMediumMemory {
			errs = append(errs, "volume "+v.Name+": emptyDir medium "+string(v.EmptyDir.Medium))
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.DownwardAPI == nil {
					continue
				}
				for _, it := range s.DownwardAPI.Items {
					if it.FieldRef == nil || !fieldPathOK(it.FieldRef.FieldPath) {
						errs = append(errs, "volume "+v.Name+": downwardAPI item "+it.Path)
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return refuse("the container kubelet does not honour: %s", strings.Join(errs, ", "))
	}
	return nil
}

// fieldPathOK: the downward API fields the container kubelet fills in.
func fieldPathOK(p string) bool {
	switch p {
	case "metadata.name", "metadata.namespace", "metadata.uid", "spec.serviceAccountName", "spec.nodeName":
		return true
	}
	return false
}

func fieldValue(pod *corev1.Pod, p string) string {
	switch p {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	}
	return pod.Spec.NodeName
}
