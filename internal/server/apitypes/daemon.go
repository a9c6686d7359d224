package apitypes

import "time"

// NotifierStatus is the delivery health of one notifier.
type NotifierStatus struct {
	Name string `json:"name"`
	// Pending counts undelivered messages, Dead those given up on.
	Pending int `json:"pending"`
	Dead    int `json:"dead"`
	// LastError is the most recent failed attempt's (redacted) error.
	LastError string `json:"last_error"`
	// OldestPending is when the oldest undelivered message was created.
	OldestPending *time.Time `json:"oldest_pending"`
}

// Failing reports whether the notifier needs attention: a message given
// up on, or one waiting for more than five minutes.
func (n NotifierStatus) Failing(now time.Time) bool {
	return n.Dead > 0 || (n.OldestPending != nil && now.Sub(*n.OldestPending) > 5*time.Minute)
}

// SandboxStatus is how local runs are isolated from the daemon and from
// each other: Mode "namespaces", or "none" with the Reason.
type SandboxStatus struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"`
	// Network is "isolated" (each run has a network namespace of its
	// own: outbound access only, no port of this machine) or "host".
	Network       string `json:"network"`
	NetworkReason string `json:"network_reason,omitempty"`
}

// AuditEntry is an entry of the audit log.
type AuditEntry struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Method string    `json:"method"`
	Roles  []string  `json:"roles"`
	Action string    `json:"action"`
	Target string    `json:"target"`
	Result string    `json:"result"`
	Status int       `json:"status,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Source string    `json:"source"`
	// Count is how many requests the entry stands for: more than 1 for
	// an aggregated anonymous entry (a minute of one peer's refusals).
	Count     int    `json:"count"`
	Anonymous bool   `json:"anonymous,omitempty"`
	Peer      string `json:"peer,omitempty"`
}

// Session is a live session of oidc mode (never its id: the store holds
// none).
type Session struct {
	Issuer     string   `json:"issuer"`
	Subject    string   `json:"subject"`
	Name       string   `json:"name"`
	Email      string   `json:"email,omitempty"`
	Groups     []string `json:"groups"`
	CreatedAt  Time     `json:"created_at"`
	LastSeenAt Time     `json:"last_seen_at"`
	// ExpiresAt is when it ends unless used: the sooner of its absolute
	// expiry and its last use plus the idle timeout.
	ExpiresAt Time `json:"expires_at"`
}
