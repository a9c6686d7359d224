package remote

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
)

// The callback server serves the result, proceed and log routes and
// nothing else: run pods, which run workspaces' code, reach only these.
func TestCallbackServerRoutes(t *testing.T) {
	r := NewReceiver(ReceiverOptions{Proceed: func(context.Context, string) *engine.Refusal { return nil }})
	s, err := NewCallbackServer(CallbackServerOptions{Receiver: r, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	tok, hash := NewToken()
	ch, err := r.Expect("cb-run", hash, time.Now().Add(time.Hour))
	require.NoError(t, err)
	code, msg := send(t, srv.URL+ProceedPath("cb-run"), delivery{method: http.MethodGet, token: tok})
	require.Equal(t, http.StatusOK, code, msg)
	var ans ProceedAnswer
	require.NoError(t, json.Unmarshal([]byte(msg), &ans))
	require.True(t, ans.Proceed)
	code, msg = send(t, srv.URL+LogPath("cb-run"), delivery{token: tok, body: []byte(`{"seq":0,"lines":["== init =="]}`)})
	require.Equal(t, http.StatusNoContent, code, msg)
	b, err := json.Marshal(okResult(t, "cb-run"))
	require.NoError(t, err)
	code, msg = send(t, srv.URL+ResultPath("cb-run"), delivery{token: tok, body: b})
	require.Equal(t, http.StatusNoContent, code, msg)
	require.Equal(t, "cb-run", (<-ch).Result.RunID)

	for _, path := range []string{"/", "/healthz", "/readyz", "/metrics", "/api/v1/workspaces", "/api/v1/status",
		"/api/v1/workspaces/net/runs", "/internal/v1/runs/cb-run", "/auth/callback"} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			code, _ := send(t, srv.URL+path, delivery{method: method, token: tok})
			require.Equal(t, http.StatusNotFound, code, "%s %s", method, path)
		}
	}
}

func TestCallbackServerOptions(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for name, tc := range map[string]struct {
		o    CallbackServerOptions
		want string
	}{
		"no receiver": {CallbackServerOptions{Logger: log}, "driftwatch/runner/remote: CallbackServerOptions.Receiver is required"},
		"no logger":   {CallbackServerOptions{Receiver: NewReceiver(ReceiverOptions{})}, "driftwatch/runner/remote: CallbackServerOptions.Logger is required"},
		"half a pair": {CallbackServerOptions{Receiver: NewReceiver(ReceiverOptions{}), Logger: log, TLSCertFile: "tls.crt"},
			"driftwatch/runner/remote: CallbackServerOptions.TLSCertFile and TLSKeyFile go together"},
		"missing files": {CallbackServerOptions{Receiver: NewReceiver(ReceiverOptions{}), Logger: log, TLSCertFile: "/nonexistent/tls.crt", TLSKeyFile: "/nonexistent/tls.key"},
			"callback server: TLS: stat /nonexistent/tls.crt: no such file or directory"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewCallbackServer(tc.o)
			require.EqualError(t, err, tc.want)
		})
	}
}

// With the main server's certificate files the callback speaks HTTPS,
// and a renewed certificate applies to the next connection.
func TestCallbackServerTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeServingCert(t, certFile, keyFile, "first")
	r := NewReceiver(ReceiverOptions{})
	s, err := NewCallbackServer(CallbackServerOptions{Receiver: r, Logger: slog.New(slog.DiscardHandler), TLSCertFile: certFile, TLSKeyFile: keyFile})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	base := "https://" + ln.Addr().String()

	post := func(ca *x509.Certificate) (*http.Response, error) {
		pool := x509.NewCertPool()
		pool.AddCert(ca)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		defer c.CloseIdleConnections()
		return c.Post(base+ResultPath("nope"), "application/json", nil)
	}
	resp, err := post(first)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the receiver answers, over TLS")

	plain, err := http.Post("http://"+ln.Addr().String()+ResultPath("nope"), "application/json", nil)
	require.NoError(t, err)
	plain.Body.Close()
	require.Equal(t, http.StatusBadRequest, plain.StatusCode, "plain HTTP to the TLS port")

	time.Sleep(10 * time.Millisecond) // a distinct modification time
	second := writeServingCert(t, certFile, keyFile, "second")
	resp, err = post(second)
	require.NoError(t, err, "the renewed certificate is served")
	resp.Body.Close()
	_, err = post(first)
	var uae x509.UnknownAuthorityError
	require.ErrorAs(t, err, &uae, "the old certificate is no longer served")
}

// writeServingCert writes a fresh self-signed certificate for 127.0.0.1
// and its key, and returns the certificate.
func writeServingCert(t *testing.T, certFile, keyFile, name string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600))
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert
}
