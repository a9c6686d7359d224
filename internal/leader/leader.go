package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
)

// State is whether this daemon schedules, and who does when it does not.
type State struct {
	log *slog.Logger
	// elector is the Lease's elector (Campaign; nil until then and without
	// leader election): Leader reads the holder it last observed.
	elector atomic.Pointer[leaderelection.LeaderElector]
	// id is this daemon's identity in the Lease (Campaign).
	id atomic.Pointer[string]
	// leading is set while the daemon schedules (it holds the Lease, or
	// leader election is off, and it has recovered the runs a previous
	// process left). /readyz answers 503 otherwise, so that a Service
	// sends the API, the status page and run pods' results to the leader
	// only.
	leading atomic.Bool
}

// New is a State that does not lead yet.
func New(log *slog.Logger) *State { return &State{log: log} }

// SetLeading records whether the daemon schedules.
func (s *State) SetLeading(v bool) { s.leading.Store(v) }

// Leading is whether the daemon schedules.
func (s *State) Leading() bool { return s.leading.Load() }

// ErrLostLease ends the daemon when it loses the Lease: a restart
// campaigns again from a clean state (the pod is restarted by Kubernetes).
var ErrLostLease = errors.New("leader election: lost the lease; scheduling stopped, exiting")

// Campaign runs lead while this daemon holds the Lease le.LeaseName in
// namespace. Until then it is a standby: it serves the status page and
// read API from the store (which it may share with the leader: lead takes
// the store's lock), is not ready, and queues and runs nothing. When the Lease is
// lost, lead's context ends (scheduling stops first, see lead) and campaign
// returns ErrLostLease once lead has returned. When ctx ends the Lease is
// released, so a standby takes over at once.
func (s *State) Campaign(ctx context.Context, client kubernetes.Interface, le config.LeaderElection, namespace string, lead func(context.Context) error) error {
	host := os.Getenv("DRIFTWATCH_POD_NAME")
	if host == "" {
		host, _ = os.Hostname()
	}
	id := host + "_" + drift.NewRunID()[:8]
	lease, renew, retry := le.Timings()

	var (
		mu       sync.Mutex
		started  bool
		finished bool
		leadErr  error
	)
	led := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: le.LeaseName, Namespace: namespace},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   lease,
		RenewDeadline:   renew,
		RetryPeriod:     retry,
		ReleaseOnCancel: true,
		Name:            le.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				if finished {
					mu.Unlock()
					return
				}
				started = true
				mu.Unlock()
				s.log.Info("leader election: leading; scheduling", "lease", le.LeaseName, "identity", id)
				leadErr = lead(lctx)
				close(led)
			},
			OnStoppedLeading: func() {
				s.log.Info("leader election: not leading", "lease", le.LeaseName, "identity", id)
			},
			OnNewLeader: func(leader string) {
				if leader != id {
					s.log.Info("leader election: standby", "lease", le.LeaseName, "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	s.id.Store(&id)
	s.elector.Store(elector)
	s.log.Info("leader election: campaigning", "lease", le.LeaseName, "namespace", namespace, "identity", id)
	elector.Run(ctx)
	mu.Lock()
	finished = true
	wasLeading := started
	mu.Unlock()
	if !wasLeading {
		return nil // ctx ended while standing by
	}
	<-led
	if leadErr != nil {
		return leadErr
	}
	if ctx.Err() == nil {
		return ErrLostLease
	}
	return nil
}

// ErrStandby is /readyz's answer, and the API trigger's and cancel's
// (503: a refusal.ErrUnavailable), while the daemon does not schedule. A
// standby that knows the leader says who it is (StandbyError).
var ErrStandby = refusal.Kind("not scheduling: a standby (another daemon holds the leader Lease), starting or stopping", refusal.ErrUnavailable)

// StandbyError is ErrStandby naming the Lease holder.
type StandbyError struct{ Leader string }

func (e StandbyError) Error() string {
	return "unavailable: this replica is a standby; the leader is " + e.Leader
}

// Unwrap makes a StandbyError match ErrStandby (and so
// refusal.ErrUnavailable).
func (e StandbyError) Unwrap() error { return ErrStandby }

// Ready is nil while the daemon schedules, else NotLeading's error.
func (s *State) Ready() error {
	if !s.leading.Load() {
		return s.NotLeading()
	}
	return nil
}

// NotLeading is ErrStandby, as a StandbyError when another daemon holds
// the Lease.
func (s *State) NotLeading() error {
	leader := s.Leader()
	if id := s.id.Load(); leader != "" && (id == nil || leader != *id) {
		return StandbyError{Leader: leader}
	}
	return ErrStandby
}

// Leader is the Lease holder's identity as the elector last observed it
// ("": unknown, or no leader election).
func (s *State) Leader() string {
	if e := s.elector.Load(); e != nil {
		return e.GetLeader()
	}
	return ""
}
