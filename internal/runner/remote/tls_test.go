package remote

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// tlsReceiverServer serves r over HTTPS with httptest's own CA, returned
// as PEM.
func tlsReceiverServer(t *testing.T, r *Receiver) (*httptest.Server, string) {
	mux := http.NewServeMux()
	mux.Handle(Route, r)
	mux.Handle(ProceedRoute, r.ProceedHandler())
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	return srv, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// writeSpecCA is writeSpec with a CallbackCA.
func writeSpecCA(t *testing.T, dir, callback, ca string, expires time.Time) (specPath string, hash [32]byte) {
	specPath, _, hash = writeSpec(t, dir, callback, expires)
	s, err := LoadSpec(specPath)
	require.NoError(t, err)
	s.CallbackCA = ca
	b, err := s.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(specPath, b, 0o600))
	return specPath, hash
}

// The reporter posts to an https callback trusting the spec's CA (its own
// HTTP client: the Poster has none), and refuses a certificate it cannot
// verify.
func TestReporterCallbackCA(t *testing.T) {
	ok := runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
		return okResult(t, "pod-run").Result, nil
	})
	t.Run("with the CA: delivered", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		srv, ca := tlsReceiverServer(t, r)
		expires := time.Now().Add(time.Hour)
		specPath, hash := writeSpecCA(t, t.TempDir(), srv.URL+ResultPath("pod-run"), ca, expires)
		ch, err := r.Expect("pod-run", hash, expires)
		require.NoError(t, err)
		p := runPod(t, specPath, ok, noApply(t))
		require.NoError(t, p.runnerErr)
		require.NoError(t, p.reporterErr)
		require.Equal(t, okResult(t, "pod-run"), (<-ch).Result)
		require.NotContains(t, p.logs, "BEGIN CERTIFICATE")
	})
	t.Run("without the CA: a verification error, nothing delivered", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		srv, _ := tlsReceiverServer(t, r)
		soon := time.Now().Add(time.Second)
		specPath, hash := writeSpecCA(t, t.TempDir(), srv.URL+ResultPath("pod-run"), "", soon)
		ch, err := r.Expect("pod-run", hash, soon)
		require.NoError(t, err)
		p := runPod(t, specPath, ok, noApply(t))
		require.NoError(t, p.runnerErr, "the runner handed its result over")
		var uae x509.UnknownAuthorityError
		require.ErrorAs(t, p.reporterErr, &uae)
		select {
		case d := <-ch:
			t.Fatalf("delivered without a verified certificate: %+v", d)
		default:
		}
	})
	t.Run("another CA: a verification error", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		srv, _ := tlsReceiverServer(t, r)
		otherCA := selfSignedPEM(t) // a CA, not the one that signed the server's certificate
		soon := time.Now().Add(time.Second)
		specPath, hash := writeSpecCA(t, t.TempDir(), srv.URL+ResultPath("pod-run"), otherCA, soon)
		_, err := r.Expect("pod-run", hash, soon)
		require.NoError(t, err)
		p := runPod(t, specPath, ok, noApply(t))
		var uae x509.UnknownAuthorityError
		require.ErrorAs(t, p.reporterErr, &uae)
	})
}

// The proceed check goes through the same client: the spec's CA.
func TestReporterProceedCallbackCA(t *testing.T) {
	r := NewReceiver(ReceiverOptions{Proceed: func(context.Context, string) *engine.Refusal { return nil }})
	srv, ca := tlsReceiverServer(t, r)
	expires := time.Now().Add(time.Hour)
	token, hash := NewToken()
	_, err := r.Expect("pod-run", hash, expires)
	require.NoError(t, err)
	defer r.Forget("pod-run")
	url := srv.URL + ProceedPath("pod-run")
	for _, tc := range []struct {
		ca   string
		want string // "" proceeds
	}{{ca, ""}, {"", "certificate signed by unknown authority"}} {
		spec := &Spec{CallbackURL: srv.URL + ResultPath("pod-run"), ProceedURL: url, CallbackCA: tc.ca}
		_, c, err := (&Reporter{Checker: &Checker{Attempts: 1}}).clients(spec)
		require.NoError(t, err)
		ref := c.Check(t.Context(), url, token)
		if tc.want == "" {
			require.Nil(t, ref)
			continue
		}
		require.NotNil(t, ref)
		require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
		require.Contains(t, ref.Reason, tc.want)
	}
}

func TestSpecCallbackCA(t *testing.T) {
	base := func() Spec {
		return Spec{Version: Version, RunID: "r", Workspace: "w", Source: Source{Path: "/s"},
			CallbackURL: "https://d.ns.svc:8080/internal/v1/runs/r/result", TokenFile: "/t", ExpiresAt: time.Now().Add(time.Hour)}
	}
	s := base()
	s.CallbackCA = selfSignedPEM(t)
	require.NoError(t, s.Validate())
	s.CallbackURL = "http://d.ns.svc:8080/internal/v1/runs/r/result"
	require.ErrorContains(t, s.Validate(), "is not an https URL")
	s = base()
	s.CallbackCA = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	require.ErrorContains(t, s.Validate(), `callback_ca: PEM block "RSA PRIVATE KEY" is not a CERTIFICATE`)
	s.CallbackCA = "not pem"
	require.ErrorContains(t, s.Validate(), "callback_ca: no PEM certificate found")
	_, err := s.CallbackClient(time.Second)
	require.Error(t, err)
	// The reporter refuses such a spec before it listens.
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.json")
	b, err := s.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(specPath, b, 0o600))
	err = (&Reporter{Logger: slog.New(slog.DiscardHandler)}).Report(t.Context(), specPath, socketPath(t))
	require.ErrorContains(t, err, "invalid spec")
	require.NotContains(t, err.Error(), "BEGIN")
}

// selfSignedPEM is a fresh CA certificate, as PEM.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
