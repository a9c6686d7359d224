//go:build linux

package kubetest

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestChartCallbackPort installs the chart's NetworkPolicies, Deployment,
// Service and ConfigMap on the real API server (which accepts and stores
// them), reads them back, and evaluates the stored NetworkPolicies for the
// peers that matter, with the namespaces' labels as the API server set
// them: a run pod, which executes workspaces' Terraform code, reaches the
// daemon on the callback port only (never the API, status page and
// metrics of port http), in its own run namespace and in the release
// namespace alike; the release namespace's other pods and Prometheus
// reach port http; the run pods' egress to the daemon names the callback
// port only. The callback port is the one the daemon's config listens on
// and its callback_url names through the Service.
func TestChartCallbackPort(t *testing.T) {
	for name, tc := range map[string]struct {
		args   []string
		runsNS string
	}{
		// Run pods in the release namespace, the default: the release
		// namespace's rule for port http must not admit them.
		"default": {nil, chartNamespace},
		"ci":      {[]string{"-f", ciValues(t)}, ciRunNamespace},
	} {
		t.Run(name, func(t *testing.T) {
			c := Start(t)
			ctx := t.Context()
			cs, err := c.Clientset()
			require.NoError(t, err)
			require.NoError(t, c.CreateNamespace(ctx, chartNamespace, nil))
			if tc.runsNS != chartNamespace {
				require.NoError(t, c.CreateNamespace(ctx, tc.runsNS, nil))
			}
			require.NoError(t, c.CreateNamespace(ctx, "monitoring", nil))
			require.NoError(t, c.CreateNamespace(ctx, "elsewhere", nil))

			_, m := mustTemplate(t, tc.args...)
			var fullname string
			for key, obj := range m {
				switch o := obj.(type) {
				case *networkingv1.NetworkPolicy:
					_, err = cs.NetworkingV1().NetworkPolicies(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				case *appsv1.Deployment:
					fullname = o.Name
					_, err = cs.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				case *corev1.Service:
					_, err = cs.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				case *corev1.ConfigMap:
					if o.Name != fullnameOf(m) {
						continue // the Grafana dashboard
					}
					_, err = cs.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
				default:
					continue
				}
				require.NoError(t, err, "create %s", key)
			}
			require.NotEmpty(t, fullname)

			// As stored by the API server.
			dep, err := cs.AppsV1().Deployments(chartNamespace).Get(ctx, fullname, metav1.GetOptions{})
			require.NoError(t, err)
			svc, err := cs.CoreV1().Services(chartNamespace).Get(ctx, fullname, metav1.GetOptions{})
			require.NoError(t, err)
			cm, err := cs.CoreV1().ConfigMaps(chartNamespace).Get(ctx, fullname, metav1.GetOptions{})
			require.NoError(t, err)
			daemonNP, err := cs.NetworkingV1().NetworkPolicies(chartNamespace).Get(ctx, fullname, metav1.GetOptions{})
			require.NoError(t, err)
			runsNP, err := cs.NetworkingV1().NetworkPolicies(tc.runsNS).Get(ctx, fullname+"-runs", metav1.GetOptions{})
			require.NoError(t, err)
			nsLabels := func(ns string) map[string]string {
				n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				require.NoError(t, err)
				return n.Labels
			}

			// The daemon's config: its listeners and the callback URL.
			var cfg struct {
				Server struct {
					Listen string `yaml:"listen"`
				} `yaml:"server"`
				Runner struct {
					Kubernetes struct {
						CallbackURL    string `yaml:"callback_url"`
						CallbackListen string `yaml:"callback_listen"`
					} `yaml:"kubernetes"`
				} `yaml:"runner"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(cm.Data["driftwatch.yaml"]), &cfg))
			httpPort, callbackPort := portOf(t, cfg.Server.Listen), portOf(t, cfg.Runner.Kubernetes.CallbackListen)
			require.NotEqual(t, httpPort, callbackPort)
			daemonPod := dep.Spec.Template
			ports := map[string]int32{}
			for _, p := range daemonPod.Spec.Containers[0].Ports {
				ports[p.Name] = p.ContainerPort
			}
			require.Equal(t, map[string]int32{"http": httpPort, "callback": callbackPort}, ports, "the container's named ports")
			var svcCallback *corev1.ServicePort
			for i, p := range svc.Spec.Ports {
				if p.Name == "callback" {
					svcCallback = &svc.Spec.Ports[i]
				}
			}
			require.NotNil(t, svcCallback, "the Service has a port callback")
			require.Equal(t, intstr.FromString("callback"), svcCallback.TargetPort)
			u, err := url.Parse(cfg.Runner.Kubernetes.CallbackURL)
			require.NoError(t, err)
			require.Equal(t, fullname+"."+chartNamespace+".svc", u.Hostname())
			require.Equal(t, strconv.Itoa(int(svcCallback.Port)), u.Port(), "callback_url names the Service's callback port")

			daemon := podRef{ns: chartNamespace, nsLabels: nsLabels(chartNamespace), labels: daemonPod.Labels}
			require.True(t, selects(t, daemonNP, daemon), "the daemon's NetworkPolicy selects its pod")
			runPod := podRef{ns: tc.runsNS, nsLabels: nsLabels(tc.runsNS),
				labels: map[string]string{"app.kubernetes.io/managed-by": "driftwatch", "driftwatch.io/workspace": "net"}}
			require.True(t, selects(t, runsNP, runPod), "the runs' NetworkPolicy selects run pods")

			for who, pc := range map[string]struct {
				peer podRef
				want []int32
			}{
				"a run pod":                           {runPod, []int32{callbackPort}},
				"a tool in the release namespace":     {podRef{ns: chartNamespace, nsLabels: nsLabels(chartNamespace), labels: map[string]string{"app": "tool"}}, []int32{httpPort}},
				"a Helm-managed pod of the namespace": {podRef{ns: chartNamespace, nsLabels: nsLabels(chartNamespace), labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}}, []int32{httpPort}},
				"Prometheus":                          {podRef{ns: "monitoring", nsLabels: nsLabels("monitoring"), labels: map[string]string{"app": "prometheus"}}, []int32{httpPort}},
				"a pod of another namespace":          {podRef{ns: "elsewhere", nsLabels: nsLabels("elsewhere"), labels: map[string]string{"app.kubernetes.io/managed-by": "driftwatch"}}, nil},
			} {
				require.Equal(t, pc.want, admitted(t, daemonNP.Spec.Ingress, daemonNP.Namespace, pc.peer, ports), "%s reaches the daemon on", who)
			}
			// The run pods' egress rules that name the daemon by selector
			// (ipBlock rules aside: the daemon's ingress above decides).
			require.Equal(t, []int32{callbackPort}, admittedEgress(t, runsNP.Spec.Egress, runsNP.Namespace, daemon, ports),
				"run pods' egress to the daemon's pod")
		})
	}
}

// fullnameOf is the Deployment's name in a rendered chart.
func fullnameOf(m manifests) string {
	for _, obj := range m {
		if d, ok := obj.(*appsv1.Deployment); ok {
			return d.Name
		}
	}
	return ""
}

func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err, "address %q", addr)
	n, err := strconv.ParseInt(p, 10, 32)
	require.NoError(t, err)
	return int32(n)
}

// podRef is a pod as NetworkPolicies see it: its namespace (and that
// namespace's labels) and its labels.
type podRef struct {
	ns       string
	nsLabels map[string]string
	labels   map[string]string
}

func matches(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	require.NoError(t, err)
	return s.Matches(labels.Set(set))
}

func selects(t *testing.T, np *networkingv1.NetworkPolicy, p podRef) bool {
	return np.Namespace == p.ns && matches(t, &np.Spec.PodSelector, p.labels)
}

// peerMatches reports whether a selector peer of a policy in namespace ns
// matches p; ipBlock peers match no pod here.
func peerMatches(t *testing.T, peer networkingv1.NetworkPolicyPeer, ns string, p podRef) bool {
	if peer.IPBlock != nil {
		return false
	}
	if peer.NamespaceSelector == nil {
		if p.ns != ns {
			return false
		}
	} else if !matches(t, peer.NamespaceSelector, p.nsLabels) {
		return false
	}
	return peer.PodSelector == nil || matches(t, peer.PodSelector, p.labels)
}

// rulePorts adds the TCP ports of the destination (named ports resolved
// with named) that a rule's ports admit; a rule without ports admits every
// port: -1.
func rulePorts(ps []networkingv1.NetworkPolicyPort, named map[string]int32, out []int32) []int32 {
	if len(ps) == 0 {
		return append(out, -1)
	}
	for _, p := range ps {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP || p.Port == nil {
			continue
		}
		if p.Port.Type == intstr.String {
			if n, ok := named[p.Port.StrVal]; ok {
				out = append(out, n)
			}
			continue
		}
		out = append(out, p.Port.IntVal)
	}
	return out
}

// admitted is the sorted ports of the selected pod (its named ports) the
// ingress rules admit from p (-1: all).
func admitted(t *testing.T, rules []networkingv1.NetworkPolicyIngressRule, ns string, p podRef, named map[string]int32) []int32 {
	var out []int32
	for _, r := range rules {
		ok := len(r.From) == 0
		for _, peer := range r.From {
			ok = ok || peerMatches(t, peer, ns, p)
		}
		if ok {
			out = rulePorts(r.Ports, named, out)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// admittedEgress is admitted for egress rules toward p, by selector.
func admittedEgress(t *testing.T, rules []networkingv1.NetworkPolicyEgressRule, ns string, p podRef, named map[string]int32) []int32 {
	var out []int32
	for _, r := range rules {
		ok := false
		for _, peer := range r.To {
			ok = ok || peerMatches(t, peer, ns, p)
		}
		if ok {
			out = rulePorts(r.Ports, named, out)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
