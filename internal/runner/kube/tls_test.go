package kube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftwatch-ca"},
		NotBefore: testNow.Add(-time.Hour), NotAfter: testNow.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// The callback CA file's content goes into the run spec, which the pod's
// reporter trusts (with the system roots) for an https callback.
func TestCallbackCA(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	ca := testCAPEM(t)
	require.NoError(t, os.WriteFile(caFile, ca, 0o644))

	got, err := ReadCallbackCA(caFile)
	require.NoError(t, err)
	require.Equal(t, string(ca), got)
	got, err = ReadCallbackCA("")
	require.NoError(t, err)
	require.Empty(t, got)
	bad := filepath.Join(dir, "bad.crt")
	require.NoError(t, os.WriteFile(bad, []byte("nope"), 0o644))
	_, err = ReadCallbackCA(bad)
	require.ErrorContains(t, err, "no PEM certificate found")

	cfg := testConfig()
	cfg.CallbackURL = "https://driftwatch.driftwatch.svc:8080/"
	cfg.CallbackCAFile = caFile
	require.NoError(t, cfg.Validate())
	cfg = cfg.withDefaults()
	cfg.CallbackCA = string(ca)
	p, err := prepare(cfg, testRequest(), testNow)
	require.NoError(t, err)
	require.Equal(t, string(ca), p.spec.CallbackCA)
	require.Equal(t, "https://driftwatch.driftwatch.svc:8080/internal/v1/runs/9f8e7d6c5b4a3921/result", p.spec.CallbackURL)
	require.NoError(t, p.spec.Validate())

	http := testConfig()
	http.CallbackCAFile = caFile
	require.ErrorContains(t, http.Validate(), `callback_ca_file is set but callback_url "http://driftwatch.driftwatch.svc:8080/" is not https`)
}

// Runner reads the CA file for every run: a rotated CA reaches the next
// run's spec; an unreadable one refuses the run before anything is created.
func TestRunnerReadsCallbackCA(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	cs := fake.NewClientset()
	var specs []remote.Spec
	cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sec := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret)
		var s remote.Spec
		require.NoError(t, json.Unmarshal(sec.Data[secretKeySpec], &s))
		specs = append(specs, s)
		return true, nil, errors.New("stop here")
	})
	r := watchingRunner(t, cs, caFile)

	_, err := r.Run(t.Context(), request("ws", "r0"))
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "setup", re.Phase)
	require.Contains(t, re.Reason, "callback CA: open "+caFile)
	for _, a := range cs.Actions() {
		require.NotEqual(t, "create", a.GetVerb(), "nothing is created without the CA")
	}

	first, second := testCAPEM(t), testCAPEM(t)
	for i, ca := range [][]byte{first, second} {
		require.NoError(t, os.WriteFile(caFile, ca, 0o644))
		_, err = r.Run(t.Context(), request("ws", fmt.Sprintf("r%d", i+1)))
		require.ErrorContains(t, err, "stop here")
		require.Len(t, specs, i+1)
		require.Equal(t, string(ca), specs[i].CallbackCA)
	}
}

// A Job whose submission failed (its Secret refused) is deleted and done
// with: while the informer's cache still shows it active, the workspace's
// next run does not adopt it (and wait for it until its deadline).
func TestFailedSubmitIsNotAdopted(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, testCAPEM(t), 0o644))
	cs := fake.NewClientset()
	var created []batchv1.Job
	cs.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = append(created, *a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy())
		return false, nil, nil
	})
	cs.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("stop here")
	})
	r := watchingRunner(t, cs, caFile)
	_, err := r.Run(t.Context(), request("ws", "r1"))
	require.ErrorContains(t, err, "stop here")
	require.Len(t, created, 1)
	// The cache as it may still be: the deleted Job, active.
	require.Empty(t, activeJobs(created, "ws", r.isConsumed))
}

// watchingRunner is a Runner on cs whose callback's CA is caFile,
// watching until the test ends.
func watchingRunner(t *testing.T, cs *fake.Clientset, caFile string) *Runner {
	t.Helper()
	r, err := New(Options{
		Client:   cs,
		Receiver: remote.NewReceiver(remote.ReceiverOptions{}),
		Config:   Config{Namespace: "runs", Image: "driftwatch:test", CallbackURL: "https://127.0.0.1:1", CallbackCAFile: caFile},
		Logger:   slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return r
}
