// Package schedule decides when each workspace's drift check runs. It parses
// cron specs, computes next runs, adds a per-job jitter, never runs one job
// twice at a time, and enforces a global concurrency cap. What a run does is
// injected as Options.Run; time comes from an injected Clock
// (scheduletest.FakeClock in tests).
//
// robfig/cron/v3 is used only as a parser and for Schedule.Next; its Cron
// runner is not used (no ctx plumbing, no recover by default, no skip
// accounting, no jitter). This package must not import runner, audit,
// notify, store, config, terraform libraries or client-go.
//
// # Specs
//
// See ParseSpec: five cron fields, descriptors (@hourly, @daily, "@every
// 30m", ...) and an optional "CRON_TZ=Zone " or "TZ=Zone " prefix. The
// parser is the leaf internal/schedule/cronspec (ParseSpec forwards to
// it), which config validation uses too. Specs
// without a prefix are evaluated in Options.Location (default time.Local,
// which is UTC in the container image). Zones are loaded with
// time.LoadLocation from the system's tzdata: the image's debian-slim
// runtime base (see the Dockerfile) ships /usr/share/zoneinfo. A build for
// an image without it (distroless, scratch) would need the main package to
// import time/tzdata.
//
// # Slots, jitter and drift
//
// A slot is an instant produced by the spec's Next. Each job has a fixed
// offset, FNV-1a(name) mod Options.Jitter, and the slot is dispatched at
// slot+offset. The offset depends only on the name, so it survives restarts,
// and it spreads jobs that share a spec (1,000 @hourly jobs with a 1h jitter
// run throughout the hour rather than all at :00). The next slot is computed
// from the previous slot, not from when the run ended or when the loop woke,
// so a schedule does not drift with run time or dispatch latency. "@every d"
// is anchored at the moment the job was added: its slots are that instant
// plus multiples of d. A job's first slot is the first one after SetJobs
// added it (or changed its spec), even if an earlier slot's jittered time is
// still ahead.
//
// # Overlap, queueing and the cap
//
// Due slots are handled in due-time order (ties: the order in which jobs first
// appeared in SetJobs) and put in one FIFO queue, which Trigger also feeds.
// At most Options.MaxConcurrent runs are active; the rest wait in the queue.
// A slot that comes while its job is already queued or running is skipped:
// it is counted in Stats.Skipped and reported to Options.OnSkip, and it is
// not run later. So a job whose run takes longer than its interval runs
// back to back at slot boundaries, never concurrently.
//
// # Runs and cancellation
//
// Every run gets its id (QueuedRun.ID) when it is queued, by a slot or by
// Queue, so it can be named before it starts. Options.OnEnqueue hears of it
// before it can start (the caller records it), and Cancel takes a queued
// run out of the queue (Run is never called for it) or cancels a running
// run's ctx with a cause. Cancel is atomic with dispatch: a run is either
// removed before Run is called or its ctx is cancelled, never neither.
//
// # Missed slots
//
// Missed slots are never replayed. Nothing is persisted, so slots that fell
// while the daemon was down are gone: after a restart each job waits for its
// next slot (use Trigger, or the audit command, for an immediate pass). If
// the loop itself wakes late, because the host was suspended or the wall
// clock stepped forward, each overdue job runs once, the slots in between are
// dropped without counting as skipped, one warning is logged, and the job
// continues from its first slot after now. The loop never sleeps more than a
// minute at a time, so a wall-clock step is noticed within a minute.
//
// # Daylight saving time
//
// Slots follow robfig/cron v3.0.1's Next, which works on wall-clock fields
// in the spec's zone. For "CRON_TZ=Europe/Berlin 30 2 * * *" in 2026
// (tested in dst_test.go):
//
//   - Spring forward, Sunday 29 March: clocks jump from 02:00 CET to 03:00
//     CEST, 02:30 does not exist, and the job does not run that day. The
//     slots are 28 March 02:30 CET (01:30 UTC), then 30 March 02:30 CEST
//     (00:30 UTC).
//   - Fall back, Sunday 25 October: 02:00-03:00 happens twice and the job
//     runs twice, at 02:30 CEST (00:30 UTC) and again at 02:30 CET (01:30
//     UTC).
//
// Hourly specs likewise have no 02:00 slot on the spring-forward day and two
// on the fall-back day. This differs from ISC cron, which runs a skipped job
// once right after the jump and a repeated one only once. Jitter is added as
// elapsed time after the slot, so it does not change any of this. To avoid
// the question, schedule in UTC or outside 01:00-03:00 local time.
//
// # Shutdown and panics
//
// Run blocks until its ctx is done, then stops dispatching, lets the
// cancellation reach the running Options.Run calls (their ctx derives from
// Run's) and waits for them to return before returning nil. A panic in
// Options.Run is recovered and logged with the job name and stack; the job
// stays scheduled.
package schedule
