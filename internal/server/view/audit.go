package view

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/driftwatch/driftwatch/internal/stats"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Audit queries.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// ErrAuditUnsupported is the answer of a store that keeps no audit log
// the server can read.
var ErrAuditUnsupported = errors.New("the audit log is not available: this driftwatch's store does not keep one")

// AuditQuery is an audit request's filter, as given.
type AuditQuery struct {
	Since  string `json:"since,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
	Limit  int    `json:"limit"`

	filter store.AuditFilter
}

// ParseAuditQuery reads since (Nd or Nh; none: every entry kept), actor,
// action, target (exact) and limit (1 to 1000, default 100). Any other
// parameter, or one given twice or empty, is an error naming it.
func ParseAuditQuery(q url.Values, now time.Time) (AuditQuery, error) {
	aq := AuditQuery{Limit: DefaultAuditLimit}
	for k, vs := range q {
		switch k {
		case "since", "actor", "action", "target", "limit":
		default:
			return aq, fmt.Errorf("unknown query parameter %q: want since, actor, action, target or limit", k)
		}
		if len(vs) > 1 {
			return aq, fmt.Errorf("query parameter %s: given %d times, at most once", k, len(vs))
		}
		if vs[0] == "" {
			return aq, fmt.Errorf("query parameter %s: empty; leave it out to select every entry", k)
		}
	}
	aq.Since, aq.Actor, aq.Action, aq.Target = q.Get("since"), q.Get("actor"), q.Get("action"), q.Get("target")
	if aq.Since != "" {
		since, err := stats.ParseSince(aq.Since, now)
		if err != nil {
			return aq, fmt.Errorf("query parameter since: %w", err)
		}
		aq.filter.Since = since
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxAuditLimit {
			return aq, fmt.Errorf("query parameter limit: %q is not a whole number from 1 to %d", v, MaxAuditLimit)
		}
		aq.Limit = n
	}
	aq.filter.Actor, aq.filter.Action, aq.filter.Target, aq.filter.Limit = aq.Actor, aq.Action, aq.Target, aq.Limit
	return aq, nil
}

// AuditEntries reads the entries q selects, newest first.
func (s *Source) AuditEntries(ctx context.Context, q AuditQuery) ([]store.AuditEntry, error) {
	rd, ok := s.Store.(store.AuditReader)
	if !ok {
		return nil, ErrAuditUnsupported
	}
	es, err := rd.AuditEntries(ctx, q.filter)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return es, nil
}
