package run

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
)

// throttled records a run whose plan the cloud API throttled, in a
// workspace of a concurrency group (the scheduler holds the groups and
// queues the workspace again for when they are released): the run is
// errored, with the holds and Terraform's reason, but the workspace's
// state and incidents stay as they were, since the plan said nothing
// about drift, and nobody is paged.
func (m *Manager) throttled(ctx context.Context, log *slog.Logger, run store.Run, res drift.Result, runLog *runlog.Log, holds []schedule.GroupHold) {
	held := make([]string, len(holds))
	for i, h := range holds {
		held[i] = holdText(h)
		m.o.Metrics.GroupThrottled(h.Key)
	}
	run.FinishedAt = res.Started.Add(res.Duration).UTC()
	run.Status, run.Tool, run.Phases = drift.StatusErrored, res.Tool, res.Phases
	run.Error = "throttled by the cloud API; checked again when its concurrency group is released (" +
		strings.Join(held, ", ") + "): " + res.Error
	err := m.storeRetry(ctx, log, "the throttled run", func() error {
		return m.store.FinishRunOnly(context.WithoutCancel(ctx), run)
	})
	if err != nil {
		log.Error("store: finish throttled run", "err", err)
	}
	runLog.Printf("== throttled by the cloud API: %s held; the workspace is checked again then ==", strings.Join(held, ", "))
	m.saveLog(ctx, log, run.ID, runLog, drift.StatusErrored)
	log.Warn("run throttled by the cloud API; its concurrency groups back off", "groups", held, "reason", res.Error)
	m.countRun(drift.StatusErrored, res)
}

// holdsCycle is the scheduler's OnCycle: the cycle's gauge, and what is
// left of each concurrency group's hold.
func (m *Manager) holdsCycle(now time.Time) {
	m.o.Metrics.SchedulerCycle(now)
	left := map[string]time.Duration{}
	for _, h := range m.sched.Holds() {
		left[h.Key] = h.Until.Sub(now)
	}
	m.o.Metrics.SetGroupHolds(left)
}

// Held says why workspace's runs wait, "" when they do not: its
// concurrency groups held after a throttled plan (holdText).
func (m *Manager) Held(workspace string) string {
	var out []string
	for _, h := range m.sched.Held(workspace) {
		out = append(out, holdText(h))
	}
	return strings.Join(out, ", ")
}

// holdText is a group's hold as people read it: "account=111 until
// 2026-11-29T10:04:05Z (2 throttled plans in a row)".
func holdText(h schedule.GroupHold) string {
	plans := "plans"
	if h.Streak == 1 {
		plans = "plan"
	}
	return fmt.Sprintf("%s until %s (%d throttled %s in a row)", h.Key, h.Until.UTC().Format(time.RFC3339), h.Streak, plans)
}
