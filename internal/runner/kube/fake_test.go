package kube

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Fault cases the real API server does not produce on demand, against the
// fake clientset.

func fakeRunner(t *testing.T, cs *fake.Clientset) *Runner {
	t.Helper()
	r, err := New(Options{
		Client:   cs,
		Receiver: remote.NewReceiver(remote.ReceiverOptions{}),
		Config:   Config{Namespace: "runs", Image: "driftwatch:test", CallbackURL: "http://127.0.0.1:1"},
		Logger:   slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return r
}

func request(ws, runID string) terraform.Request {
	return terraform.Request{RunID: runID, Workspace: ws, Source: terraform.Source{Path: "/modules/" + ws}, Timeout: time.Minute}
}

func TestSecretFailureDeletesJob(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("secrets is forbidden")
	})
	r := fakeRunner(t, cs)
	_, err := r.Run(t.Context(), request("ws", "r1"))
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "submit", re.Phase)
	require.Equal(t, "create run secret: secrets is forbidden", re.Reason)

	var deleted bool
	for _, a := range cs.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "jobs" {
			deleted = true
			require.Equal(t, JobName("ws", "r1"), d.GetName())
			require.Equal(t, metav1.DeletePropagationBackground, *d.GetDeleteOptions().PropagationPolicy)
		}
	}
	require.True(t, deleted, "the Job without its Secret is deleted")
	jobs, err := cs.BatchV1().Jobs("runs").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, jobs.Items)
}

func TestRunRefusesUnmappedSecrets(t *testing.T) {
	cs := fake.NewClientset()
	r := fakeRunner(t, cs)
	req := request("ws", "r1")
	req.SecretEnvFiles = map[string]string{"TOKEN": "/daemon/token"}
	_, err := r.Run(t.Context(), req)
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "setup", re.Phase)
	require.Contains(t, re.Reason, "secret env TOKEN has no Kubernetes Secret key")
	for _, a := range cs.Actions() {
		require.NotEqual(t, "create", a.GetVerb(), "nothing is created for a refused run")
	}
}

func TestNewRequiresDependencies(t *testing.T) {
	_, err := New(Options{})
	require.EqualError(t, err, "driftwatch/runner/kube: Options.Client is required")
	_, err = New(Options{Client: fake.NewClientset(), Receiver: remote.NewReceiver(remote.ReceiverOptions{}),
		Logger: slog.New(slog.DiscardHandler)})
	require.ErrorContains(t, err, "kubernetes runner: namespace is required")
}

func TestRunBeforeWatchWaits(t *testing.T) {
	r, err := New(Options{
		Client: fake.NewClientset(), Receiver: remote.NewReceiver(remote.ReceiverOptions{}),
		Config: Config{Namespace: "runs", Image: "i", CallbackURL: "http://x"}, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = r.Run(ctx, request("ws", "r1"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "waiting for the kubernetes runner's caches")
}
