package drift

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the classification of one finding.
type Kind string

// Finding kinds. Noise is listed in reports but never counted or alerted.
const (
	KindDrift     Kind = "drift"     // changed outside Terraform (resource_drift)
	KindPending   Kind = "pending"   // planned change with no drift behind it
	KindForbidden Kind = "forbidden" // a resource type owned by GitOps, not Terraform
	KindNoise     Kind = "noise"     // data-source reads, output-only changes, null/empty churn
	// KindBackend is a state-backend hygiene finding (unencrypted or
	// unlocked state, world-readable state files). It never changes a
	// workspace's status, which answers "does reality match the code?".
	KindBackend Kind = "backend"
	// KindCheck is a failing or unknown check of the configuration: a check
	// block's assertion, a resource or output precondition or
	// postcondition, or a variable validation. Address is the check's
	// address (check.NAME, a resource address, output.NAME, var.NAME), Type
	// the kind of check (check, resource, output, var), Action its status
	// (fail or unknown) and Detail its author's error message, redacted and
	// capped at MaxCheckDetail.
	KindCheck Kind = "check"
	// KindUnmanaged (a scan's finding) is a resource a scan listed that no
	// workspace's state holds: Address is TYPE[IDENTITY], Detail the name
	// its provider displays.
	KindUnmanaged Kind = "unmanaged"
	// KindManagedTwice (a scan's finding) is a resource a scan listed that
	// two or more workspaces' states hold: ManagedBy names them.
	KindManagedTwice Kind = "managed_twice"
)

// MaxCheckDetail caps a check finding's Detail, in bytes before the
// ellipsis.
const MaxCheckDetail = 300

// Status is the verdict for one workspace run.
type Status string

// Statuses, from least to most severe.
const (
	StatusClean   Status = "clean"
	StatusPending Status = "pending"
	// StatusValidation is a workspace with failing or unknown checks and
	// neither drift nor forbidden resources.
	StatusValidation Status = "validation"
	StatusDrift      Status = "drift"
	StatusForbidden  Status = "forbidden"
	StatusErrored    Status = "errored"
)

// Severity orders statuses: errored > forbidden > drift > validation >
// pending > clean.
func (s Status) Severity() int {
	switch s {
	case StatusClean:
		return 0
	case StatusPending:
		return 1
	case StatusValidation:
		return 2
	case StatusDrift:
		return 3
	case StatusForbidden:
		return 4
	case StatusErrored:
		return 5
	}
	return -1
}

// Where a forbidden resource type was seen.
const (
	SeenInConfig  = "config"
	SeenInState   = "state"
	SeenInPlanned = "plan"
)

// Finding is one classified resource. It never carries attribute values:
// Attributes holds changed attribute paths only.
type Finding struct {
	Kind       Kind     `json:"kind"`
	Address    string   `json:"address"`
	Type       string   `json:"type"`
	Action     string   `json:"action"`
	Attributes []string `json:"attributes"`
	// SeenIn lists where a forbidden type was found (config, state, plan).
	SeenIn []string `json:"seen_in,omitempty"`
	// Ignored is set when an ignore rule silenced this finding; ignored
	// findings are listed but do not change the status.
	Ignored bool `json:"ignored,omitempty"`
	// Detail is a one-line explanation: value-free for backend findings;
	// for check findings the check's error message as its author wrote it,
	// redacted and capped at MaxCheckDetail.
	Detail string `json:"detail,omitempty"`
	// Window (drift findings) is when the change happened: after the last
	// clean check, no later than the first check that saw it. Kept from
	// run to run while the same drift stays.
	Window *Window `json:"window,omitempty"`
	// Attribution (drift findings) is the attribution command's answer:
	// who changed the resource. AttributionError is why there is none
	// when the command failed ("attribution failed: …", redacted).
	Attribution      *Attribution `json:"attribution,omitempty"`
	AttributionError string       `json:"attribution_error,omitempty"`
	// Commit (pending findings of a git source) is the commit that last
	// changed the resource's block, at the commit the run checked out.
	Commit *Commit `json:"commit,omitempty"`
	// Provider (drift findings) is the resource's provider's source
	// address, e.g. registry.terraform.io/hashicorp/aws.
	Provider string `json:"provider,omitempty"`
	// ManagedBy (managed_twice findings) lists each state holding the
	// resource as "WORKSPACE: ADDRESS", sorted.
	ManagedBy []string `json:"managed_by,omitempty"`
	// Shape (drift findings) is the change without its values: each
	// changed top-level attribute's JSON kind before and after
	// ("content: string → string"), what grouping compares.
	Shape string `json:"shape,omitempty"`
}

// Window is when a drift happened: after From (the last clean check; zero
// when unknown) and no later than To (the first check that saw it).
type Window struct {
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to"`
}

// Attribution is who changed a drifted resource, as the workspace's
// attribution command answered: the actor, when, the audit trail it read
// (source), the event's id and a link to it.
type Attribution struct {
	Actor   string    `json:"actor"`
	Time    time.Time `json:"time,omitzero"`
	Source  string    `json:"source,omitempty"`
	EventID string    `json:"event_id,omitempty"`
	URL     string    `json:"url,omitempty"`
}

// Commit is the commit that last changed a pending resource's block.
type Commit struct {
	Hash    string    `json:"hash"`
	Author  string    `json:"author"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
}

// Counts tallies findings that count towards status (noise and ignored
// findings are never counted).
type Counts struct {
	Drift     int `json:"drift"`
	Pending   int `json:"pending"`
	Forbidden int `json:"forbidden"`
	// Check counts failing or unknown checks (kind check); omitted when
	// zero, so that the counts of a workspace without checks read as they
	// did before checks were findings.
	Check int `json:"check,omitempty"`
	Noise int `json:"noise"`
	// Unmanaged and ManagedTwice count a scan's findings; omitted when
	// zero, as a workspace never has them.
	Unmanaged    int `json:"unmanaged,omitempty"`
	ManagedTwice int `json:"managed_twice,omitempty"`
	// Hygiene counts backend findings (they never change the status).
	Hygiene int `json:"hygiene"`
}

// CountFindings tallies fs.
func CountFindings(fs []Finding) Counts {
	var c Counts
	for _, f := range fs {
		if f.Ignored {
			continue
		}
		switch f.Kind {
		case KindDrift:
			c.Drift++
		case KindPending:
			c.Pending++
		case KindForbidden:
			c.Forbidden++
		case KindCheck:
			c.Check++
		case KindNoise:
			c.Noise++
		case KindBackend:
			c.Hygiene++
		case KindUnmanaged:
			c.Unmanaged++
		case KindManagedTwice:
			c.ManagedTwice++
		}
	}
	return c
}

// StatusOf returns the most severe status the findings justify (never
// errored: that comes from the run, not the plan).
func StatusOf(fs []Finding) Status {
	c := CountFindings(fs)
	switch {
	case c.Forbidden > 0:
		return StatusForbidden
	case c.Drift > 0, c.Unmanaged > 0, c.ManagedTwice > 0:
		// A scan's findings are reality not matching the code too.
		return StatusDrift
	case c.Check > 0:
		return StatusValidation
	case c.Pending > 0:
		return StatusPending
	}
	return StatusClean
}

// SortFindings orders findings by kind severity, then address.
func SortFindings(fs []Finding) {
	rank := map[Kind]int{KindForbidden: 0, KindManagedTwice: 1, KindUnmanaged: 2, KindDrift: 3, KindCheck: 4, KindPending: 5, KindBackend: 6, KindNoise: 7}
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Kind != fs[j].Kind {
			return rank[fs[i].Kind] < rank[fs[j].Kind]
		}
		return strings.Compare(fs[i].Address, fs[j].Address) < 0
	})
}

// Result is the outcome of one workspace run.
type Result struct {
	Workspace string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	Status    Status            `json:"status"`
	Started   time.Time         `json:"started_at"`
	Duration  time.Duration     `json:"-"`
	// Error is a one-line, secret-free reason when Status is errored.
	Error    string    `json:"error"`
	Findings []Finding `json:"findings"`
	// Tool is the binary and version that produced the plan, e.g. "terraform 1.11.4".
	Tool   string  `json:"tool,omitempty"`
	Phases []Phase `json:"phases,omitempty"`
	// Providers are the provider versions the run used (the lock file
	// after init: source address to version); nil when unknown.
	Providers map[string]string `json:"-"`
	// Managed is a workspace's managed instances with their identities
	// (planparse.Plan.Managed), nil for a failed run or a scan: what scans
	// compare with.
	Managed []Managed `json:"-"`
}

// Phase is the duration of one step of a run (source, init, plan, show).
type Phase struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration_ns"`
}

// Fingerprint identifies the set of counted findings of a workspace: the
// workspace, and each finding's kind, address, action and attribute paths,
// sorted. Values never enter it, nor does Detail (a check's message may
// change from run to run while the check keeps failing). Two runs with the same fingerprint describe the
// same incident; a clean workspace has the empty fingerprint.
func Fingerprint(workspace string, fs []Finding) string {
	var keys []string
	for _, f := range fs {
		if f.Ignored || f.Kind == KindNoise || f.Kind == KindBackend {
			continue
		}
		attrs := append([]string(nil), f.Attributes...)
		sort.Strings(attrs)
		keys = append(keys, string(f.Kind)+"\x00"+f.Address+"\x00"+f.Action+"\x00"+strings.Join(attrs, "\x01"))
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	h := sha256.New()
	h.Write([]byte(workspace))
	for _, k := range keys {
		h.Write([]byte{0xff})
		h.Write([]byte(k))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// CapDetail makes s one line (runs of white space become one space) of at
// most MaxCheckDetail bytes, cut at a character boundary and ended with
// "…" when it was longer.
func CapDetail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= MaxCheckDetail {
		return s
	}
	cut := MaxCheckDetail
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
