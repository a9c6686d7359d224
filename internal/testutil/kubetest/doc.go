//go:build linux

// Package kubetest runs a real Kubernetes control plane for tests: Debian's
// etcd, kube-apiserver and kube-controller-manager (Job, TTL, garbage
// collector, service account and namespace controllers) built from the Go
// module proxy by hack/provision-k8s.sh, all on 127.0.0.1 and stopped by PID
// when the test ends. There is no kubelet and no scheduler: PlayKubelet (or
// PlayKubeletContainers, with an exit per container) lets a test play the
// kubelet for the pods of one namespace, so the real Job controller
// completes or fails Jobs (Connect lets a helper process of the test play
// it, against the control plane the test started); Processes.Run plays a pod's containers as local
// processes, each with only its own volume mounts materialised; and
// PlayKubeletDocker runs them for real, in containers of driftwatch's image
// (DockerKubelet: image, command, env and envFrom, Secret/ConfigMap/
// emptyDir/projected token volumes with their modes and fsGroup, security
// context, probes, activeDeadlineSeconds, termination message), refusing
// any pod field it does not honour so that a new chart field cannot go
// untested. It also
// holds the tests of the Helm chart (charts/driftwatch), rendered by the
// provisioned helm and validated server-side by the real API server.
//
// The binaries come from DRIFTWATCH_KUBE_BIN_DIR (the KUBE_BIN_DIR line of
// hack/provision-k8s.sh). Without it tests skip, unless DRIFTWATCH_E2E=1
// (make test, CI) turns that into a failure.
//
// Only tests import this package. It must not import driftwatch's own
// packages other than internal/config and internal/tftest (a leaf of test
// helpers), so any package may use it in tests. Its chart monitoring
// tests also import internal/metrics and internal/drift (leaves), to check
// the chart's alerts and dashboard against the metrics the daemon
// registers.
package kubetest
