package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/policy/envelope"
)

// Remediation modes.
const (
	RemediationOff     = "off"
	RemediationApprove = "approve"
	RemediationAuto    = "auto"
)

// DefaultApprovalTTL is how long a pending remediation waits for approval.
const DefaultApprovalTTL = 24 * time.Hour

// RemediationSwitch is the daemon-wide `remediation:` block.
type RemediationSwitch struct {
	// Enabled is the global kill switch: false stops every apply (default
	// true). POST /api/v1/remediation/pause does the same at run time.
	Enabled *bool `yaml:"enabled"`
}

// On reports whether remediation may apply at all (config only).
func (r RemediationSwitch) On() bool { return r.Enabled == nil || *r.Enabled }

// Remediation is a workspace's (or defaults') remediation policy. Unset
// keys take defaults.remediation's value, then the built-in default.
type Remediation struct {
	// Mode is off (default), approve or auto.
	Mode string `yaml:"mode"`
	// Envelope is allow_actions, the planned actions an apply may perform
	// (default [update]; also create, delete, replace), and max_resources,
	// the resources one remediation changes at most (default 10): the
	// remediation envelope's own keys and checks (envelope.Envelope).
	envelope.Envelope `yaml:",inline"`
	// ApprovalTTL: a pending remediation expires after this (default 24h).
	ApprovalTTL Duration `yaml:"approval_ttl"`
	// LockTimeout is how long plan and apply wait for the state lock
	// (default 0s: refuse at once as state_locked). A workspace's 0s
	// overrides a longer default.
	LockTimeout *WaitDuration `yaml:"lock_timeout"`
}

// RemediationPolicy is a workspace's effective remediation policy.
type RemediationPolicy struct {
	Mode        string
	Envelope    envelope.Envelope
	ApprovalTTL time.Duration
	LockTimeout time.Duration
}

func (r *Remediation) validate(pos *positions, key string) []error {
	if r == nil {
		return nil
	}
	var errs []error
	switch r.Mode {
	case "", RemediationOff, RemediationApprove, RemediationAuto:
	default:
		errs = append(errs, pos.errorf(key+".mode", "unknown mode %q (use off, approve or auto)", r.Mode))
	}
	if err := r.Envelope.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			k, msg, _ := strings.Cut(line, ": ")
			errs = append(errs, pos.errorf(key+"."+k, "%s", msg))
		}
	}
	return errs
}

// EffectiveRemediation merges the workspace's remediation over
// defaults.remediation over the built-in defaults.
func (c *Config) EffectiveRemediation(w Workspace) RemediationPolicy {
	p := RemediationPolicy{Mode: RemediationOff, ApprovalTTL: DefaultApprovalTTL}
	for _, r := range []*Remediation{c.Defaults.Remediation, w.Remediation} {
		if r == nil {
			continue
		}
		if r.Mode != "" {
			p.Mode = r.Mode
		}
		if r.AllowActions != nil {
			p.Envelope.AllowActions = r.AllowActions
		}
		if r.MaxResources > 0 {
			p.Envelope.MaxResources = r.MaxResources
		}
		if r.ApprovalTTL > 0 {
			p.ApprovalTTL = time.Duration(r.ApprovalTTL)
		}
		if r.LockTimeout != nil {
			p.LockTimeout = time.Duration(*r.LockTimeout)
		}
	}
	p.Envelope = p.Envelope.WithDefaults()
	return p
}

func (c *Config) validateRemediation(pos *positions) []error {
	return c.Defaults.Remediation.validate(pos, "defaults.remediation")
}

// String is the mode for logs.
func (p RemediationPolicy) String() string {
	return fmt.Sprintf("mode=%s allow_actions=%v max_resources=%d", p.Mode, p.Envelope.AllowActions, p.Envelope.MaxResources)
}
