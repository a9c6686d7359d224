package kube

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NewClient connects to the cluster: the kubeconfig file if set, else the
// in-cluster service account.
func NewClient(path string) (kubernetes.Interface, error) {
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
	return kubernetes.NewForConfig(rc)
}
