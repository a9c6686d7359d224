// Package certfile serves a TLS certificate from a PEM pair of files,
// read again when either file changes, for the daemon's HTTP server and
// the Kubernetes runs' callback listener alike. It is a leaf: it imports
// no other internal package.
package certfile

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Reloader serves the certificate in certFile and keyFile, reading the
// pair again when either file changes (modification time or size), so
// that a renewed certificate (cert-manager, a rotated Secret) applies to
// the next handshake without a restart. A pair that does not load (half
// written, mismatched) is logged once and the previous certificate kept.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu     sync.Mutex
	cert   *tls.Certificate
	loaded stamp // the files' stamp when cert was read
	failed stamp // the stamp whose pair last failed to load (logged once)
}

// stamp identifies a version of the two files.
type stamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

func statStamp(certFile, keyFile string) (stamp, error) {
	c, err := os.Stat(certFile)
	if err != nil {
		return stamp{}, err
	}
	k, err := os.Stat(keyFile)
	if err != nil {
		return stamp{}, err
	}
	return stamp{certMod: c.ModTime(), keyMod: k.ModTime(), certSize: c.Size(), keySize: k.Size()}, nil
}

// New loads the pair once: a pair that cannot work fails at
// start-up.
func New(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	st, err := statStamp(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load %s and %s: %w", certFile, keyFile, err)
	}
	return &Reloader{certFile: certFile, keyFile: keyFile, log: log, cert: &cert, loaded: st}, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := statStamp(r.certFile, r.keyFile)
	if err != nil || st == r.loaded || st == r.failed {
		// Gone for a moment (a Secret volume swaps its files), unchanged,
		// or already found broken: keep serving what works.
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.failed = st
		r.log.Warn("TLS certificate changed but does not load; serving the previous one",
			"cert_file", r.certFile, "key_file", r.keyFile, "err", err.Error())
		return r.cert, nil
	}
	r.cert, r.loaded, r.failed = &cert, st, stamp{}
	r.log.Info("TLS certificate reloaded", "cert_file", r.certFile)
	return r.cert, nil
}

// TLSConfig is a server's TLS configuration: TLS 1.2 or later, the
// certificate from r.
func (r *Reloader) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}
