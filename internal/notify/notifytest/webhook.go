package notifytest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// WebhookServer is a receiver of driftwatch's signed webhooks on an
// httptest TLS server on 127.0.0.1. It verifies each delivery as the
// webhook package's doc tells receivers to, independently of that
// package: HMAC-SHA256 over timestamp + "." + body, a timestamp within 5
// minutes, a strict decode of the body. Unverified deliveries get 401,
// undecodable ones 400, others 200 (duplicates too, flagged).
type WebhookServer struct {
	Faults

	// Secret is the signing key.
	Secret string
	// URL is the endpoint, with a canary token in its path: a secret.
	URL string
	// URLFile and SecretFile hold URL and Secret (for the Config).
	URLFile, SecretFile string

	srv  *httptest.Server
	path string

	mu         sync.Mutex
	attempts   int
	deliveries []WebhookDelivery
	seen       map[string]bool
}

// WebhookDelivery is one request that reached the receiver (not one
// answered by an injected failure).
type WebhookDelivery struct {
	Header    http.Header
	Body      []byte
	Payload   WebhookPayload // zero unless Verified and decodable
	Verified  bool
	Reason    string // why it was refused, if it was
	Duplicate bool   // its X-Driftwatch-Delivery was seen before
}

// WebhookPayload is the receiver's view of the body.
type WebhookPayload struct {
	Version  int             `json:"version"`
	ID       string          `json:"id"`
	Event    string          `json:"event"`
	Incident WebhookIncident `json:"incident"`
	Delta    *WebhookDelta   `json:"delta"`
	// Remediation is sent with event "remediation" only.
	Remediation *WebhookRemediation `json:"remediation"`
	At          time.Time           `json:"at"`
}

// WebhookRemediation is the payload's remediation.
type WebhookRemediation struct {
	ID         string     `json:"id"`
	Mode       string     `json:"mode"`
	Result     string     `json:"result"`
	Reason     string     `json:"reason"`
	Resources  int        `json:"resources"`
	ApplyRunID string     `json:"apply_run_id"`
	ExpiresAt  *time.Time `json:"expires_at"`
	URL        string     `json:"url"`
}

// WebhookIncident is the payload's incident.
type WebhookIncident struct {
	Key               string            `json:"key"`
	Workspace         string            `json:"workspace"`
	Class             string            `json:"class"`
	Severity          string            `json:"severity"`
	Owner             string            `json:"owner"`
	Team              string            `json:"team"`
	Labels            map[string]string `json:"labels"`
	Since             time.Time         `json:"since"`
	Counts            drift.Counts      `json:"counts"`
	Findings          []drift.Finding   `json:"findings"`
	FindingsTruncated bool              `json:"findings_truncated"`
	Error             string            `json:"error"`
	RunID             string            `json:"run_id"`
	URL               string            `json:"url"`
	Escalated         int               `json:"escalated"`
	Reason            string            `json:"reason"`
	Group             *WebhookGroup     `json:"group"`
}

// WebhookGroup is a group incident's group.
type WebhookGroup struct {
	ID         string   `json:"id"`
	Cause      string   `json:"cause"`
	Title      string   `json:"title"`
	Workspaces []string `json:"workspaces"`
}

// WebhookDelta is the payload's delta.
type WebhookDelta struct {
	Added   []drift.Finding `json:"added"`
	Removed []drift.Finding `json:"removed"`
	Changed []drift.Finding `json:"changed"`
}

// WebhookTolerance is how far a delivery's timestamp may be from now.
const WebhookTolerance = 5 * time.Minute

// NewWebhookServer starts a receiver that lives until the test ends. An
// empty secret gets a random canary.
func NewWebhookServer(t testing.TB, secret string) *WebhookServer {
	t.Helper()
	if secret == "" {
		secret = Canary("webhook-secret")
	}
	s := &WebhookServer{Secret: secret, seen: map[string]bool{}}
	s.path = "/hooks/" + Canary("webhook-token")
	s.srv = startTLS(s.count(s.Wrap(http.HandlerFunc(s.serve))))
	s.URL = s.srv.URL + s.path
	s.URLFile = SecretFile(t, "webhook-url", s.URL)
	s.SecretFile = SecretFile(t, "webhook-secret", s.Secret)
	t.Cleanup(func() {
		s.Faults.Close()
		s.srv.Close()
	})
	return s
}

// HTTPClient trusts the server's certificate.
func (s *WebhookServer) HTTPClient() *http.Client { return s.srv.Client() }

// Certificate is the server's certificate (for a notifier's ca_file).
func (s *WebhookServer) Certificate() *x509.Certificate { return s.srv.Certificate() }

// Secrets implements ServerControl: the URL, its token and the secret.
func (s *WebhookServer) Secrets() []string {
	return []string{s.URL, strings.TrimPrefix(s.path, "/hooks/"), s.Secret}
}

// Attempts counts every request, injected failures included.
func (s *WebhookServer) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Deliveries returns the requests that reached the receiver, in order.
func (s *WebhookServer) Deliveries() []WebhookDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deliveries)
}

func (s *WebhookServer) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.attempts++
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (s *WebhookServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != s.path {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	d := WebhookDelivery{Header: r.Header.Clone(), Body: body}
	status := http.StatusOK
	if reason := webhookVerify([]byte(s.Secret), r.Header, body, time.Now()); reason != "" {
		d.Reason, status = reason, http.StatusUnauthorized
	} else {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d.Payload); err != nil {
			d.Reason, status = "decode: "+err.Error(), http.StatusBadRequest
			d.Payload = WebhookPayload{}
		} else {
			d.Verified = true
		}
	}
	s.mu.Lock()
	if d.Verified {
		id := r.Header.Get("X-Driftwatch-Delivery")
		d.Duplicate = s.seen[id]
		s.seen[id] = true
	}
	s.deliveries = append(s.deliveries, d)
	s.mu.Unlock()
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, http.StatusText(status))
}

// webhookVerify returns why a delivery fails verification, or "".
func webhookVerify(secret []byte, h http.Header, body []byte, now time.Time) string {
	ts := h.Get("X-Driftwatch-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "bad timestamp"
	}
	if d := now.Sub(time.Unix(sec, 0)); d > WebhookTolerance || d < -WebhookTolerance {
		return "stale timestamp"
	}
	sig, ok := strings.CutPrefix(h.Get("X-Driftwatch-Signature"), "sha256=")
	if !ok {
		return "bad signature header"
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	if !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(mac.Sum(nil)))) {
		return "signature mismatch"
	}
	if h.Get("X-Driftwatch-Delivery") == "" {
		return "no delivery id"
	}
	return ""
}
