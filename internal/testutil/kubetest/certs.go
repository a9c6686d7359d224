//go:build linux

package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one cluster, written to files in dir.
type pki struct {
	caPEM                     []byte // CA of the serving certificate; in every kubeconfig
	servingCert, servingKey   string // kube-apiserver --tls-cert-file / --tls-private-key-file
	saPublicKey, saSigningKey string // service account token key pair
}

// newPKI makes a throwaway CA, a serving certificate for 127.0.0.1 and the
// in-cluster names signed by it, and the service account key pair (RSA, as
// kube-apiserver's --service-account-signing-key-file requires a key it can
// sign RS256 with). Generating them here keeps openssl out of the test path
// and lets kubeconfigs verify TLS instead of skipping verification.
func newPKI(dir string) (*pki, error) {
	p := &pki{
		servingCert:  filepath.Join(dir, "serving.crt"),
		servingKey:   filepath.Join(dir, "serving.key"),
		saPublicKey:  filepath.Join(dir, "sa.pub"),
		saSigningKey: filepath.Join(dir, "sa.key"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(serviceIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	srvKeyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	for _, f := range []struct {
		path, typ string
		der       []byte
	}{
		{p.servingCert, "CERTIFICATE", srvDER},
		{p.servingKey, "PRIVATE KEY", srvKeyDER},
		{p.saPublicKey, "PUBLIC KEY", saPubDER},
		{p.saSigningKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return p, nil
}
