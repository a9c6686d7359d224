package run

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// Lead is what Manager.Lead needs of the daemon beside the runs.
type Lead struct {
	// Claim, if set, is called first and its release on the way out: the
	// store lock a leader-election standby takes once it leads.
	Claim func(ctx context.Context) (release func(), err error)
	// Jobs, if set, are the Kubernetes Jobs: a previous daemon's are
	// adopted, and the Jobs are watched while the daemon leads.
	Jobs Jobs
	// Prepare, if set, is called once the runs are recovered, before the
	// daemon says it leads (the silences a predecessor added are loaded).
	Prepare func(ctx context.Context) error
	// SetLeading tells who leads (leader.State.SetLeading): true once the
	// runs are recovered and prepared, false on the way out.
	SetLeading func(bool)
	// Loops run beside the scheduler until ctx ends (the silences' release
	// loop, the remediation loop, the outbox); an error of one ends Lead.
	Loops []func(ctx context.Context) error
	// Workspaces are the configured workspaces: those never checked are
	// queued at once (QueueUnchecked).
	Workspaces func() []string
}

// Jobs is the Kubernetes runner as Lead sees it (kube.Runner's Watch and
// Adopt, the adopted Jobs joined to the remediation controller).
type Jobs interface {
	// Watch follows the runner's Jobs until ctx ends; awaited runs end
	// when it returns.
	Watch(ctx context.Context) error
	// Adopt finds the Jobs a previous daemon left running.
	Adopt(ctx context.Context) ([]Adopted, error)
}

// adoptTimeout bounds the search for a previous daemon's Jobs.
const adoptTimeout = 2 * time.Minute

// Lead is the daemon's scheduling side, run while it may schedule
// (always, or while it holds the Lease): Jobs a previous daemon left
// running are adopted (their runs stay running, to be finished under
// their ids), the other runs a previous process left are recovered
// (Recover), and the scheduler runs until ctx ends. On the way out
// scheduling stops first; with Jobs, Watch is then stopped (awaited runs
// end and their Jobs keep running for the next daemon to adopt) before
// the runs are cancelled.
func (m *Manager) Lead(ctx context.Context, l Lead) error {
	if l.Claim != nil {
		release, err := l.Claim(ctx)
		if err != nil {
			return err
		}
		defer release()
	}
	defer l.SetLeading(false)
	g, gctx := errgroup.WithContext(ctx)
	runCtx := gctx
	var adopted []Adopted
	var keep []string // adopted Jobs' runs: finished under their ids
	if l.Jobs != nil {
		var err error
		if runCtx, adopted, err = m.adopt(gctx, l.Jobs, g); err != nil {
			return err
		}
		for _, a := range adopted {
			keep = append(keep, a.RunID)
		}
	}
	// Nothing was queued by this process yet: the API refuses runs until
	// leading is set.
	if err := m.Recover(ctx, keep...); err != nil {
		g.Go(func() error { return err }) // stops the Watch
		return g.Wait()
	}
	for _, a := range adopted {
		g.Go(func() error { m.AwaitAdopted(runCtx, a); return nil })
	}
	if l.Prepare != nil {
		if err := l.Prepare(ctx); err != nil {
			g.Go(func() error { return err })
			return g.Wait()
		}
	}
	l.SetLeading(true)
	g.Go(func() error { return m.Schedule(runCtx) })
	for _, loop := range l.Loops {
		g.Go(func() error { return loop(gctx) })
	}
	m.QueueUnchecked(l.Workspaces())
	return g.Wait()
}

// adopt starts jobs' Watch and adopts the Jobs a previous daemon left
// running, marking their workspaces busy (Adopting). It returns the
// context runs run under: cancelled once Watch has stopped, which happens
// (in g) when ctx ends (awaited runs then end and their Jobs keep running
// for the next daemon) or Watch fails. From then on Stop: no run starts.
func (m *Manager) adopt(ctx context.Context, jobs Jobs, g *errgroup.Group) (context.Context, []Adopted, error) {
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	watchDone := make(chan error, 1)
	go func() { watchDone <- jobs.Watch(watchCtx) }()
	actx, cancel := context.WithTimeout(ctx, adoptTimeout)
	adopted, err := jobs.Adopt(actx)
	cancel()
	if err != nil {
		stopWatch()
		<-watchDone //nolint:errcheck // stopped here: the caller returns its own error
		return nil, nil, fmt.Errorf("kubernetes runner: adopt running jobs: %w", err)
	}
	m.Adopting(adopted)
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	g.Go(func() error {
		defer stopWatch()
		var err error
		select {
		case <-ctx.Done():
			m.Stop() // no run starts from here on
			stopWatch()
			<-watchDone //nolint:errcheck // stopped here: the caller returns its own error
		case err = <-watchDone:
			m.Stop()
			err = fmt.Errorf("kubernetes runner stopped: %w", err)
		}
		cancelRuns()
		return err
	})
	return runCtx, adopted, nil
}
