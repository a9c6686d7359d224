// Package leader decides which daemon schedules. Without leader election
// it is the one holding its store's lock (ClaimStore: a flock on
// "<store>.lock", taken at start; a second daemon on the same store is
// refused); with it (Kubernetes, runner.leader_election) it is the holder
// of a coordination.k8s.io Lease (State.Campaign), which then takes the
// store's lock, while standbys serve reads from the shared store.
//
// What it owns: the store lock (ClaimAtStart without leader election,
// ClaimWhenLeading for an electing daemon that begins to lead; none on
// PostgreSQL: FileLocked) and the sweep that follows it (processes and run
// directories a SIGKILLed predecessor's runs left, found by the owner tag
// StoreOwner derives from the store's path), the Lease campaign, the hold
// of a store's leadership lock without leader election (HoldLock: its
// loss ends the daemon, as the Lease's does), and the standby's answers (State.Ready, State.NotLeading: ErrStandby or
// a StandbyError naming the leader when known, both a
// refusal.ErrUnavailable, which the API answers 503).
//
// What it must not touch: runs (internal/run queues and records them) and
// the scheduler; it only tells its caller when to lead, and its caller
// (run.Manager.Lead) tells it when leading has begun (State.SetLeading).
package leader
