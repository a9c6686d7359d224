package cafile

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

// testCA is a self-signed CA certificate, as PEM, and the certificate.
func testCA(t *testing.T) (string, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftwatch test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), c
}

// Pool trusts the file's CA (a chain it signs verifies) besides the
// system's roots, and refuses a file that Read refuses.
func TestPool(t *testing.T) {
	caPEM, ca := testCA(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(file, []byte(caPEM), 0o600))

	pool, err := Pool(file)
	require.NoError(t, err)
	_, err = ca.Verify(x509.VerifyOptions{Roots: pool})
	require.NoError(t, err, "the CA file's certificate is trusted")

	plain, err := Pool("")
	require.NoError(t, err)
	_, err = ca.Verify(x509.VerifyOptions{Roots: plain})
	require.Error(t, err, "without a file: the system's roots only")

	bad := filepath.Join(dir, "bad.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a certificate"), 0o600))
	_, err = Pool(bad)
	require.EqualError(t, err, bad+": no PEM certificate found")

	_, err = Pool(filepath.Join(dir, "missing.pem"))
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = PoolWith("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")
	require.EqualError(t, err, `PEM block "EC PRIVATE KEY" is not a CERTIFICATE`)
}
