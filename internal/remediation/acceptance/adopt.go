package acceptance

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
)

// ErrAdoptBusy is Adopt's error while an adoption of the same scan runs
// (a refusal.ErrBusy): one at a time per scan, as acceptances per
// workspace.
var ErrAdoptBusy = refusal.Kind("an adoption of this scan is already running", refusal.ErrBusy)

// errNoAdopt is Adopt's error on a daemon that runs no Terraform of its
// own (Options.Unavailable), a refusal.ErrUnavailable.
var errNoAdopt = refusal.Kind("adopting runs Terraform in the daemon, which this one does not (runner.mode kubernetes): run `driftwatch adopt SCAN FINDING...` from CI or a workstation with the same config", refusal.ErrUnavailable)

// Adopt generates and proves the import blocks and configuration of the
// unmanaged resources of scan named by their finding addresses
// (engine.Adopt, on the scan's request as the daemon runs it), requested
// by by, while the caller waits: ctx bounds it, and so does the daemon's
// life. Nothing is stored: the outcome is the caller's. Its errors:
// refusal.ErrUnknownWorkspace, errNoAdopt (refusal.ErrUnavailable),
// ErrAdoptBusy, or engine.Adopt's (the adoption failed).
func (s *Service) Adopt(ctx context.Context, scan string, findings []string, by string) (drift.AdoptOutcome, error) {
	req, ok := s.o.Target(scan)
	switch {
	case !ok:
		return drift.AdoptOutcome{}, refusal.ErrUnknownWorkspace
	case s.o.Unavailable != "":
		return drift.AdoptOutcome{}, errNoAdopt
	}
	s.mu.Lock()
	if s.adopting[scan] {
		s.mu.Unlock()
		return drift.AdoptOutcome{}, ErrAdoptBusy
	}
	s.adopting[scan] = true
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.adopting, scan)
		s.mu.Unlock()
		s.wg.Done()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	req.RunID = drift.NewRunID() // the run directory is the adoption's
	log := s.o.Logger.With("scan", scan, "adoption", req.RunID)
	log.Info("adopting unmanaged resources", "findings", findings, "by", by)
	out, err := s.o.Steps.orDefault().Adopt(ctx, req, findings)
	if err != nil {
		log.Warn("adoption failed", "err", err)
		return out, err
	}
	log.Info("adoption finished", "proven", out.Proven, "adopted", len(out.Adoptions), "missing", len(out.Missing))
	return out, nil
}
