// Package cafile reads and checks a PEM file of CA certificates, such as
// runner.kubernetes.callback_ca_file or a notifier's ca_file: Read is the
// one check, used by config validation (at load) and by the Kubernetes
// runner (for every run, so a rotated CA reaches the next one), and Pool
// and PoolWith, the system's roots plus such certificates, are the one
// place CA certificates become a pool (the notifiers' TLS, the remote
// runner's callback). It is a leaf: it imports no other internal package.
package cafile

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxBytes bounds a CA file: a few certificates.
const maxBytes = 1 << 20

// Read reads and checks a CA file ("" is none): PEM certificates only, at
// most 1 MiB. It returns the file's content.
func Read(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxBytes)
	}
	if _, err := Parse(b); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(b), nil
}

// Parse parses PEM text holding one or more CA certificates and returns
// them. It refuses text with no certificate, or with a block that is not a
// parsable certificate, so a key or a truncated file is caught where it is
// configured, not at a pod's first post.
func Parse(pemText []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := pemText; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %q is not a CERTIFICATE", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// Pool returns the system's roots plus the certificates of the CA file at
// path, read and checked by Read ("" adds none).
func Pool(path string) (*x509.CertPool, error) {
	text, err := Read(path)
	if err != nil {
		return nil, err
	}
	return PoolWith(text)
}

// PoolWith returns the system's roots (none where the system has none)
// plus the CA certificates in pemText ("" adds none), checked by Parse.
func PoolWith(pemText string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if pemText == "" {
		return pool, nil
	}
	certs, err := Parse([]byte(pemText))
	if err != nil {
		return nil, err
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}
