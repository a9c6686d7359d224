package inventory

import (
	"context"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
)

// RetireRemoved resolves the open and pending incidents of every
// workspace that is not in the current config (incident.Retire): one
// resolve message per open incident through the outbox, to the
// notifiers its plan in plans routed it to (the config before the
// reload); a workspace missing there (removed while the daemon was
// stopped) is routed as a workspace of that name without labels. The
// workspace's runs and incident rows stay: its history is kept. Leader
// only.
func (w *Watcher) RetireRemoved(ctx context.Context, plans map[string]incident.Plan) {
	cfg := w.Config()
	open, err := w.p.Store.Incidents(ctx, "")
	if err != nil {
		w.o.Logger.Error("retire removed workspaces: list incidents", "err", err.Error())
		return
	}
	var removed []string
	for _, in := range open {
		if !slices.Contains(removed, in.Workspace) && !slices.ContainsFunc(cfg.Workspaces, func(w config.Workspace) bool { return w.Name == in.Workspace }) {
			removed = append(removed, in.Workspace)
		}
	}
	if len(removed) == 0 {
		return
	}
	for _, ws := range removed {
		p, ok := plans[ws]
		if !ok {
			cp := *cfg
			cp.Workspaces = []config.Workspace{{Name: ws}}
			p = incident.Plans(&cp)[ws]
		}
		runID := ""
		if s, ok := w.p.Runs.State(ws); ok {
			runID = s.LastRunID
		}
		now := time.Now().UTC()
		if err := w.p.Store.RetireWorkspace(ctx, ws, now, p.RetireOutcome(now, runID, ws, drift.NewRunID)); err != nil {
			w.o.Logger.Error("retire removed workspace", "workspace", ws, "err", err.Error())
			continue
		}
		w.o.Logger.Info("workspace removed: its incidents are resolved", "workspace", ws, "reason", incident.RemovedReason)
	}
	w.p.Outbox.Wake()
}
