// mkv1 writes internal/store/sqlite/testdata/v1.db with the schema-1 store.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

func main() {
	ctx := context.Background()
	path := os.Args[1]
	s, err := sqlite.Open(ctx, path, slog.New(slog.DiscardHandler))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	fd := drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags.owner"}}
	ff := drift.Finding{Kind: drift.KindForbidden, Address: "kubernetes_deployment.app", Type: "kubernetes_deployment", Action: "no-op", SeenIn: []string{"config"}}
	steps := []struct {
		ws     string
		status drift.Status
		fs     []drift.Finding
	}{
		{"net", drift.StatusClean, nil},
		{"net", drift.StatusDrift, []drift.Finding{fd}},
		{"net", drift.StatusErrored, nil},
		{"apps", drift.StatusForbidden, []drift.Finding{ff, fd}},
		{"apps", drift.StatusClean, nil},
		{"net", drift.StatusDrift, []drift.Finding{fd}},
	}
	for i, st := range steps {
		r := store.Run{ID: fmt.Sprintf("v1-run-%d", i), Workspace: st.ws, Trigger: "schedule", StartedAt: t0.Add(time.Duration(i) * time.Hour)}
		if err := s.StartRun(ctx, r); err != nil {
			panic(err)
		}
		r.Status, r.FinishedAt, r.Findings, r.Tool = st.status, r.StartedAt.Add(time.Minute), st.fs, "terraform 1.11.4"
		r.Phases = []drift.Phase{{Name: "plan", Duration: 42 * time.Second}}
		if st.status == drift.StatusErrored {
			r.Error = "plan: exit status 1"
		}
		if _, _, err := s.FinishRun(ctx, r); err != nil {
			panic(err)
		}
	}
	// One run left running, as a killed v1 process leaves it.
	if err := s.StartRun(ctx, store.Run{ID: "v1-run-inflight", Workspace: "apps", Trigger: "manual", StartedAt: t0.Add(10 * time.Hour)}); err != nil {
		panic(err)
	}
	if err := s.Close(); err != nil {
		panic(err)
	}
}
