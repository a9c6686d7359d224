package view

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/control"
)

// MaxAdoptFindings bounds how many findings one adoption names.
const MaxAdoptFindings = 100

// adoptWriteMargin is how much longer than control.AdoptTimeout an
// adoption's answer may take to be written.
const adoptWriteMargin = time.Minute

// The adoption states (apitypes.Adoption.State).
const (
	AdoptProven    = "proven"
	AdoptNotProven = "not_proven"
	AdoptFailed    = "failed"
)

// AdoptRefusal is why an adoption was not run: the status to answer and
// its reason (a sentence without its capital and full stop).
type AdoptRefusal struct {
	Status int
	Reason string
}

func (e *AdoptRefusal) Error() string { return e.Reason }

// cleanFindings is the findings an adoption names, trimmed and each once;
// a refusal (400) for none, too many or one that is not an address.
func cleanFindings(in []string) ([]string, *AdoptRefusal) {
	if len(in) > MaxAdoptFindings {
		return nil, &AdoptRefusal{http.StatusBadRequest, fmt.Sprintf("findings: at most %d", MaxAdoptFindings)}
	}
	seen := map[string]bool{}
	var out []string
	for i, s := range in {
		s = strings.TrimSpace(s)
		if s == "" || len(s) > 1024 || strings.ContainsAny(s, "\r\n\x00") {
			return nil, &AdoptRefusal{http.StatusBadRequest, fmt.Sprintf("findings[%d]: want a finding address such as aws_s3_bucket[bucket=\"logs\"]", i)}
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, &AdoptRefusal{http.StatusBadRequest, "name the unmanaged resources to adopt: findings, their finding addresses"}
	}
	return out, nil
}

// Adopt adopts the unmanaged resources of scan named by findings (their
// finding addresses) as by, while the request waits: it lifts w's write
// deadline past control.AdoptTimeout, which bounds the adoption. It
// returns the adoption (proven, not proven, or failed with its reason),
// or why none was run: 501 without AdoptControl, 404 for an unknown
// workspace, 400 for one that is not a scan or for no findings, 409
// while one of the scan runs, 503 when this daemon runs none.
func (s *Source) Adopt(ctx context.Context, w http.ResponseWriter, scan string, findings []string, by string) (apitypes.Adoption, *AdoptRefusal) {
	if s.Adp == nil {
		return apitypes.Adoption{}, &AdoptRefusal{http.StatusNotImplemented, "adopting unmanaged resources is not available on this driftwatch"}
	}
	info, ok := s.Configured(scan)
	switch {
	case !ok:
		return apitypes.Adoption{}, &AdoptRefusal{http.StatusNotFound, fmt.Sprintf("no workspace called %q is configured", scan)}
	case !info.Scan:
		return apitypes.Adoption{}, &AdoptRefusal{http.StatusBadRequest, fmt.Sprintf("%q is not a scan: only a scan's unmanaged resources can be adopted", scan)}
	}
	findings, refused := cleanFindings(findings)
	if refused != nil {
		return apitypes.Adoption{}, refused
	}
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(control.AdoptTimeout + adoptWriteMargin)); err != nil {
		s.Logger.Warn("adopt: cannot lift the write deadline: a long adoption's answer may be cut", "err", err)
	}
	ctx, cancel := context.WithTimeout(ctx, control.AdoptTimeout)
	defer cancel()
	out, err := s.Adp.Adopt(ctx, scan, findings, by)
	switch {
	case errors.Is(err, control.ErrUnknownWorkspace):
		return apitypes.Adoption{}, &AdoptRefusal{http.StatusNotFound, fmt.Sprintf("no workspace called %q is configured", scan)}
	case errors.Is(err, control.ErrBusy):
		return apitypes.Adoption{}, &AdoptRefusal{http.StatusConflict, "an adoption of this scan is already running"}
	case errors.Is(err, control.ErrUnavailable):
		return apitypes.Adoption{}, &AdoptRefusal{http.StatusServiceUnavailable, err.Error()}
	}
	return AdoptionOf(scan, findings, by, out, err), nil
}

// AdoptionOf is an adoption's outcome (out, or its failure err) as the
// API and the page show it. The file is given only when proven.
func AdoptionOf(scan string, findings []string, by string, out drift.AdoptOutcome, err error) apitypes.Adoption {
	a := apitypes.Adoption{Scan: scan, Findings: findings, RequestedBy: by, Tool: out.Tool, Proven: out.Proven,
		Adopted: []apitypes.AdoptedResource{}, Missing: nonNil(out.Missing), Remaining: nonNil(out.Remaining)}
	for _, x := range out.Adoptions {
		a.Adopted = append(a.Adopted, apitypes.AdoptedResource{Finding: x.Finding, Import: strings.TrimSpace(x.Import), Config: strings.TrimSpace(x.Config)})
	}
	switch {
	case err != nil:
		a.State, a.Proven, a.Error = AdoptFailed, false, err.Error()
	case out.Proven:
		a.State, a.File, a.FileName = AdoptProven, out.File(), drift.AdoptFile
	default:
		a.State = AdoptNotProven
	}
	return a
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
