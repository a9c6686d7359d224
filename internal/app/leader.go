package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/driftwatch/driftwatch/internal/config"
)

// errLostLease ends the daemon when it loses the Lease: a restart
// campaigns again from a clean state (the pod is restarted by Kubernetes).
var errLostLease = errors.New("leader election: lost the lease; scheduling stopped, exiting")

// campaign runs lead while this daemon holds the Lease le.LeaseName in
// namespace. Until then it is a standby: it serves the status page and
// read API from the store (which it may share with the leader: lead takes
// the store's lock), is not ready, and queues and runs nothing. When the Lease is
// lost, lead's context ends (scheduling stops first, see lead) and campaign
// returns errLostLease once lead has returned. When ctx ends the Lease is
// released, so a standby takes over at once.
func (d *daemon) campaign(ctx context.Context, le config.LeaderElection, namespace string, lead func(context.Context) error) error {
	host := os.Getenv("DRIFTWATCH_POD_NAME")
	if host == "" {
		host, _ = os.Hostname()
	}
	id := host + "_" + newRunID()[:8]
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
			Client:     d.kube.client.CoordinationV1(),
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
				d.log.Info("leader election: leading; scheduling", "lease", le.LeaseName, "identity", id)
				leadErr = lead(lctx)
				close(led)
			},
			OnStoppedLeading: func() {
				d.log.Info("leader election: not leading", "lease", le.LeaseName, "identity", id)
			},
			OnNewLeader: func(leader string) {
				if leader != id {
					d.log.Info("leader election: standby", "lease", le.LeaseName, "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	d.leaseID.Store(&id)
	d.elector.Store(elector)
	d.log.Info("leader election: campaigning", "lease", le.LeaseName, "namespace", namespace, "identity", id)
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
		return errLostLease
	}
	return nil
}

// errStandby is /readyz's answer, and the API trigger's and cancel's
// (503), while the daemon does not schedule. A standby that knows the
// leader says who it is (standbyError).
var errStandby = errors.New("not scheduling: a standby (another daemon holds the leader Lease), starting or stopping")

// standbyError is errStandby naming the Lease holder.
type standbyError struct{ leader string }

func (e standbyError) Error() string {
	return "unavailable: this replica is a standby; the leader is " + e.leader
}

func (e standbyError) Is(target error) bool { return target == errStandby }

func (d *daemon) ready() error {
	if !d.leading.Load() {
		return d.notLeading()
	}
	return nil
}

// notLeading is errStandby, as a standbyError when another daemon holds
// the Lease.
func (d *daemon) notLeading() error {
	leader := d.leader()
	if id := d.leaseID.Load(); leader != "" && (id == nil || leader != *id) {
		return standbyError{leader: leader}
	}
	return errStandby
}

// leader is the Lease holder's identity as the elector last observed it
// ("": unknown, or no leader election).
func (d *daemon) leader() string {
	if e := d.elector.Load(); e != nil {
		return e.GetLeader()
	}
	return ""
}
