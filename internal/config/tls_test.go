package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writePair writes a self-signed CA certificate (ca.crt) and a serving
// certificate it signed (tls.crt, tls.key) to dir.
func writePair(t *testing.T, dir string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "driftwatch"}, DNSNames: []string{"driftwatch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	for name, b := range map[string]*pem.Block{
		"ca.crt": {Type: "CERTIFICATE", Bytes: caDER}, "tls.crt": {Type: "CERTIFICATE", Bytes: der},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: kder},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600))
	}
}

func TestServerTLS(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir)
	cfg, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte("server:\n  tls_cert_file: tls.crt\n  tls_key_file: tls.key\n"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "tls.crt"), cfg.Server.TLSCertFile, "relative to the config file")
	require.Equal(t, filepath.Join(dir, "tls.key"), cfg.Server.TLSKeyFile)

	other := t.TempDir()
	writePair(t, other)
	for name, tc := range map[string]struct{ yaml, want string }{
		"cert without key": {"server:\n  listen: :8443\n  tls_cert_file: tls.crt\n",
			"driftwatch.yaml:3: server.tls_cert_file: needs server.tls_key_file too (set both or neither)"},
		"key without cert": {"server:\n  tls_key_file: tls.key\n",
			"driftwatch.yaml:2: server.tls_key_file: needs server.tls_cert_file too (set both or neither)"},
		"missing file": {"server:\n  tls_cert_file: tls.crt\n  tls_key_file: nope.key\n",
			"driftwatch.yaml:3: server.tls_key_file: stat " + filepath.Join(dir, "nope.key") + ": no such file or directory"},
		"not a pair": {"server:\n  tls_cert_file: tls.crt\n  tls_key_file: " + filepath.Join(other, "tls.key") + "\n",
			"driftwatch.yaml:2: server.tls_cert_file: " + filepath.Join(dir, "tls.crt") + " and " + filepath.Join(other, "tls.key") +
				" are not a certificate and its key: tls: private key does not match public key"},
		"a CA is not a key": {"server:\n  tls_cert_file: tls.crt\n  tls_key_file: ca.crt\n",
			"server.tls_cert_file: "},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(filepath.Join(dir, "driftwatch.yaml"), []byte(tc.yaml))
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "PRIVATE KEY")
		})
	}
}

func TestRunnerCallbackCA(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir)
	net := mustAbs(t, "testdata/net")
	doc := func(callback, ca string) []byte {
		return []byte("workspaces:\n  - name: a\n    source: { path: " + net + " }\nrunner:\n  mode: kubernetes\n  kubernetes:\n" +
			"    namespace: runs\n    image: i\n    callback_url: " + callback + "\n    callback_ca_file: " + ca + "\n")
	}
	cfg, err := Load(filepath.Join(dir, "driftwatch.yaml"), doc("https://driftwatch.dw.svc:8080", "ca.crt"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "ca.crt"), cfg.Runner.Kubernetes.CallbackCAFile, "relative to the config file")
	require.Equal(t, filepath.Join(dir, "ca.crt"), cfg.Runner.Kubernetes.Kube().CallbackCAFile)

	for name, tc := range map[string]struct {
		callback, ca, want string
	}{
		"http callback with a CA": {"http://driftwatch.dw.svc:8080", "ca.crt",
			`driftwatch.yaml:10: runner.kubernetes.callback_ca_file: is set but callback_url "http://driftwatch.dw.svc:8080" is not https`},
		"missing CA file": {"https://d:8443", "nope.crt",
			"driftwatch.yaml:10: runner.kubernetes.callback_ca_file: open " + filepath.Join(dir, "nope.crt") + ": no such file or directory"},
		"a key is not a CA": {"https://d:8443", "tls.key",
			`driftwatch.yaml:10: runner.kubernetes.callback_ca_file: ` + filepath.Join(dir, "tls.key") + `: PEM block "EC PRIVATE KEY" is not a CERTIFICATE`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(filepath.Join(dir, "driftwatch.yaml"), doc(tc.callback, tc.ca))
			require.ErrorContains(t, err, tc.want)
		})
	}
}
