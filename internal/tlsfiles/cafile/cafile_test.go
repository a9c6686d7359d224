package cafile

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// testCA is a self-signed CA certificate (httptest's), as PEM, and the
// certificate.
func testCA(t *testing.T) (string, *x509.Certificate) {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	c := srv.Certificate()
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})), c
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
