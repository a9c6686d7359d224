package kube

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NewClient connects to the cluster: the kubeconfig file if set, else the
// in-cluster service account, its requests limited to qps a second with
// bursts of burst (client-go's defaults, 5 and 10, where zero).
func NewClient(path string, qps float32, burst int) (kubernetes.Interface, error) {
	var rc *rest.Config
	var err error
	if path != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes runner: client config: %w", err)
	}
	rc.UserAgent = "driftwatch"
	rc.QPS, rc.Burst = qps, burst
	return kubernetes.NewForConfig(rc)
}
