package acceptance_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/remediation/acceptance"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// The daemon's adoption: the scan's request (a run directory of its
// own) and the findings reach engine.Adopt, whose outcome or failure is
// the caller's; one at a time per scan, another scan alongside; an
// unknown scan and a daemon that runs no Terraform are refused; the
// daemon's stop ends a running one, and Wait waits for it.
func TestServiceAdopt(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	started, release := make(chan terraform.Request, 2), make(chan struct{})
	steps := acceptance.Steps{Adopt: func(ctx context.Context, req terraform.Request, findings []string) (drift.AdoptOutcome, error) {
		started <- req
		select {
		case <-release:
		case <-ctx.Done():
			return drift.AdoptOutcome{}, ctx.Err()
		}
		if req.Workspace == "bad" {
			return drift.AdoptOutcome{}, errors.New("the scan's query lists none of the named resources")
		}
		return drift.AdoptOutcome{Proven: true, Adoptions: []drift.Adoption{{Finding: findings[0]}}}, nil
	}}
	daemon, stop := context.WithCancel(t.Context())
	opts := acceptance.Options{Store: st, Config: func() *config.Config { return &config.Config{} }, Logger: slog.New(slog.DiscardHandler), Steps: steps,
		Target: func(ws string) (terraform.Request, bool) {
			return terraform.Request{Workspace: ws, RunID: "not-this"}, ws != "nope"
		}}
	s, err := acceptance.New(daemon, opts)
	require.NoError(t, err)

	type result struct {
		out drift.AdoptOutcome
		err error
	}
	adopt := func(scan string) chan result {
		c := make(chan result, 1)
		go func() {
			out, err := s.Adopt(t.Context(), scan, []string{"f[a]"}, "olga")
			c <- result{out, err}
		}()
		return c
	}
	files := adopt("files")
	req := <-started
	require.Equal(t, "files", req.Workspace)
	require.NotEqual(t, "not-this", req.RunID, "a run directory of its own")
	require.NotEmpty(t, req.RunID)
	_, err = s.Adopt(t.Context(), "files", []string{"f[a]"}, "pat")
	require.ErrorIs(t, err, refusal.ErrBusy)
	require.ErrorIs(t, err, acceptance.ErrAdoptBusy)
	bad := adopt("bad")
	<-started
	close(release)
	r := <-files
	require.NoError(t, r.err)
	require.Equal(t, drift.AdoptOutcome{Proven: true, Adoptions: []drift.Adoption{{Finding: "f[a]"}}}, r.out)
	r = <-bad
	require.EqualError(t, r.err, "the scan's query lists none of the named resources")

	_, err = s.Adopt(t.Context(), "nope", []string{"f[a]"}, "olga")
	require.ErrorIs(t, err, refusal.ErrUnknownWorkspace)

	// The daemon stops: the running adoption ends, Wait waits for it.
	steps.Adopt = func(ctx context.Context, _ terraform.Request, _ []string) (drift.AdoptOutcome, error) {
		started <- terraform.Request{}
		<-ctx.Done()
		return drift.AdoptOutcome{}, ctx.Err()
	}
	opts.Steps = steps
	s, err = acceptance.New(daemon, opts)
	require.NoError(t, err)
	files = adopt("files")
	<-started
	stop()
	s.Wait()
	require.ErrorIs(t, (<-files).err, context.Canceled)

	// The kubernetes runner runs none.
	opts.Unavailable = "not here"
	u, err := acceptance.New(t.Context(), opts)
	require.NoError(t, err)
	_, err = u.Adopt(t.Context(), "files", []string{"f[a]"}, "olga")
	require.ErrorIs(t, err, refusal.ErrUnavailable)
	require.ErrorContains(t, err, "driftwatch adopt SCAN FINDING")
}
