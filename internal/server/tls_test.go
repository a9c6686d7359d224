package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testCA is a throwaway CA that signs serving certificates for 127.0.0.1.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftwatch-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue writes a serving certificate for 127.0.0.1 with serial to
// certFile and keyFile.
func (ca *testCA) issue(t *testing.T, serial int64, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "driftwatch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	touch(t, certFile, keyFile)
}

// touch moves the files' modification time on, past any file system's
// time granularity.
var touchClock = time.Now()

func touch(t *testing.T, files ...string) {
	touchClock = touchClock.Add(time.Minute)
	for _, f := range files {
		require.NoError(t, os.Chtimes(f, touchClock, touchClock))
	}
}

// serveTLS runs the server of o on 127.0.0.1 and returns its base URL.
func serveTLS(t *testing.T, o Options) string {
	t.Helper()
	s, err := New(o)
	require.NoError(t, err)
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return "https://" + ln.Addr().String()
}

// tlsGet fetches url on a fresh connection trusting roots and returns the
// status and the serial of the server's certificate.
func tlsGet(t *testing.T, url string, cfg *tls.Config) (int, int64, error) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber.Int64(), nil
}

func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := newTestCA(t)
	ca.issue(t, 100, certFile, keyFile)
	h := newHarness(t)
	o := h.options()
	o.Config.TLSCertFile, o.Config.TLSKeyFile = certFile, keyFile
	base := serveTLS(t, o)

	code, serial, err := tlsGet(t, base+"/healthz", &tls.Config{RootCAs: ca.pool})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 100, serial)
	require.Contains(t, h.logs.String(), "https server listening")

	t.Run("a client without the CA refuses the certificate", func(t *testing.T) {
		_, _, err := tlsGet(t, base+"/healthz", &tls.Config{RootCAs: x509.NewCertPool()})
		var uae x509.UnknownAuthorityError
		require.ErrorAs(t, err, &uae)
	})
	t.Run("plain HTTP is not served", func(t *testing.T) {
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get("http" + base[len("https"):] + "/healthz")
		if err == nil {
			defer resp.Body.Close()
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "Go answers plain HTTP on a TLS port with 400")
		}
	})
	t.Run("TLS 1.1 is refused", func(t *testing.T) {
		_, _, err := tlsGet(t, base+"/healthz", &tls.Config{RootCAs: ca.pool, MaxVersion: tls.VersionTLS11})
		require.Error(t, err)
	})
	t.Run("a renewed certificate is picked up without a restart", func(t *testing.T) {
		ca.issue(t, 101, certFile, keyFile)
		code, serial, err := tlsGet(t, base+"/healthz", &tls.Config{RootCAs: ca.pool})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 101, serial)
		require.Contains(t, h.logs.String(), "TLS certificate reloaded")
	})
	t.Run("a broken pair keeps the previous certificate", func(t *testing.T) {
		require.NoError(t, os.WriteFile(keyFile, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600))
		touch(t, keyFile)
		for range 2 {
			code, serial, err := tlsGet(t, base+"/healthz", &tls.Config{RootCAs: ca.pool})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code)
			require.EqualValues(t, 101, serial)
		}
		require.Equal(t, 1, strings.Count(h.logs.String(), "does not load; serving the previous one"), "logged once")
		// Repaired: the next handshake serves the new pair.
		ca.issue(t, 102, certFile, keyFile)
		_, serial, err := tlsGet(t, base+"/healthz", &tls.Config{RootCAs: ca.pool})
		require.NoError(t, err)
		require.EqualValues(t, 102, serial)
	})
	require.NotContains(t, h.logs.String(), "PRIVATE KEY", "no key material in logs")
}

func TestNewTLSErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	newTestCA(t).issue(t, 1, certFile, keyFile)
	otherCert, otherKey := filepath.Join(dir, "o.crt"), filepath.Join(dir, "o.key")
	newTestCA(t).issue(t, 2, otherCert, otherKey)
	for name, tc := range map[string]struct{ cert, key, want string }{
		"half a pair": {certFile, "", "go together"},
		"missing":     {certFile, filepath.Join(dir, "nope.key"), "no such file"},
		"mismatch":    {certFile, otherKey, "private key does not match public key"},
	} {
		t.Run(name, func(t *testing.T) {
			o := newHarness(t).options()
			o.Config.TLSCertFile, o.Config.TLSKeyFile = tc.cert, tc.key
			_, err := New(o)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
