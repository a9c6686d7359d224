package oneshot

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/pipeline"
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
