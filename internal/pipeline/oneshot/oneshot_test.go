package oneshot

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/report"
)

// Audit needs a config and a logger, and refuses filters that select no
// workspace before it runs anything.
func TestAuditRefuses(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	_, err := Audit(t.Context(), Options{Logger: log})
	require.EqualError(t, err, "driftwatch/app: AuditOptions.Config is required")
	_, err = Audit(t.Context(), Options{Config: &config.Config{}})
	require.EqualError(t, err, "driftwatch/app: AuditOptions.Logger is required")

	cfg := &config.Config{Workspaces: []config.Workspace{{Name: "net"}}}
	_, err = Audit(t.Context(), Options{Config: cfg, Logger: log, Filter: pipeline.Filter{Names: []string{"db"}}})
	require.Error(t, err)
	_, err = Audit(t.Context(), Options{Config: &config.Config{}, Logger: log})
	require.EqualError(t, err, "no workspace matches the filters")
}

// Request refuses a workspace the config does not have, after discovery.
func TestRequestUnknownWorkspace(t *testing.T) {
	cfg := &config.Config{Workspaces: []config.Workspace{{Name: "net"}}}
	cfg.Terraform.Sandbox = "off"
	discovered := 0
	discover := func(context.Context, *config.Config) error { discovered++; return nil }
	_, err := Request(t.Context(), cfg, discover, "db", slog.New(slog.DiscardHandler))
	require.EqualError(t, err, "unknown workspace db")
	require.Equal(t, 1, discovered, "discovery comes first")
}

// An audit's report has groups only with grouping.enabled, bounded by
// grouping.min_members.
func TestGroupFindings(t *testing.T) {
	at := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	tags := []drift.Finding{{Kind: drift.KindDrift, Address: "aws_s3_bucket.b", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags_all"}}}
	rep := func() *report.Report {
		return report.New(at, at, []drift.Result{
			{Workspace: "a", Status: drift.StatusDrift, Findings: tags},
			{Workspace: "b", Status: drift.StatusDrift, Findings: tags},
		})
	}
	off, on, three := rep(), rep(), rep()
	groupFindings(off, &config.Config{})
	require.Empty(t, off.Groups)
	groupFindings(on, &config.Config{Grouping: config.Grouping{Enabled: true}})
	require.Len(t, on.Groups, 1)
	require.Len(t, on.Groups[0].Members, 2)
	groupFindings(three, &config.Config{Grouping: config.Grouping{Enabled: true, MinMembers: 3}})
	require.Empty(t, three.Groups)
}
