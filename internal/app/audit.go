package app

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// auditRecorder is the server's audit recorder (server.Options.Audit):
// the daemon's store when it keeps an audit log (store.AuditStore), else
// nil (nothing is recorded, and GET /api/v1/audit answers 501).
func auditRecorder(st store.Store) server.AuditRecorder {
	if a, ok := st.(store.AuditStore); ok {
		return a
	}
	return nil
}

// limitAudit puts the rate limits of anonymous entries in front of rec
// (server.AuditLimiter), once for the server and Slack's handler both,
// so that they share them; nil when rec is.
func limitAudit(rec server.AuditRecorder, log *slog.Logger, reg prometheus.Registerer) server.AuditRecorder {
	if rec == nil {
		return nil
	}
	return server.NewAuditLimiter(rec, server.AuditLimits{Logger: log, Registerer: reg})
}

// replayStore is where Slack's handler keeps the signatures it has seen
// (slackinteract.Options.Replay): the daemon's store when it can, so
// that a replay is refused after a restart too; else nil (in memory).
func replayStore(st store.Store) store.ReplayStore {
	if r, ok := st.(store.ReplayStore); ok {
		return r
	}
	return nil
}
