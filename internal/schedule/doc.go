// Package schedule decides when each workspace's drift check runs. It parses
// cron specs (ParseSpec: five fields, descriptors such as @hourly and
// "@every 30m", an optional CRON_TZ= or TZ= zone; the parser is the leaf
// schedule/cronspec, which config validation uses too), computes each
// job's slots, adds a per-job jitter (FNV-1a of the name, so it survives
// restarts), never runs one job twice at a time (a slot that comes while
// its job is queued or running is skipped and counted), and enforces a
// global concurrency cap over one FIFO queue that Trigger and Queue feed
// too. A job's concurrency groups (groups.go) cap the runs of its group
// at once and hold the group after a throttled run (Throttle: a doubling,
// jittered backoff, the job queued again); a run waiting for its group
// lets the runs behind it go ahead.
//
// What a run does is injected as Options.Run, and time comes from an
// injected Clock (scheduletest.FakeClock in tests). Every run gets its id
// when it is queued (Options.OnEnqueue hears of it first); Cancel removes
// a queued run or cancels a running one's ctx, atomically with dispatch.
// Missed slots are never replayed; a loop that wakes late (a suspended
// host, a clock step) runs each overdue job once. Run returns once its ctx
// is done and every running Options.Run has returned; a panic in one is
// recovered and logged, and the job stays scheduled.
//
// robfig/cron/v3 is used only as a parser and for Schedule.Next, whose
// daylight-saving semantics it keeps (docs/cli.md). How slots, jitter,
// missed slots and zones behave in detail: docs/architecture/terraform.md.
//
// The run lifecycle (internal/run) owns the scheduler; the remediation
// controller reads its errors (ErrBusy, ErrUnknownJob), which are refusals
// (the leaf schedule/refusal: the API's 409 and 404). DaemonClock is the
// daemon's clock (a build with the faults tag steps it through a file). It
// must not import runner, pipeline, run, notify, store, config, terraform
// libraries or client-go.
package schedule
