// Package bench holds driftwatch's performance benchmarks, measured side by
// side in one run so that results are ratios on the same machine, not
// absolute times. It has no production code; everything is in _test.go files:
//
//   - plan_test.go (with genplan_test.go): parse and classify a generated
//     ~50 MB plan JSON with internal/terraform/planparse + internal/policy versus
//     json.Unmarshal into tfjson.Plan: time, allocation, MB/s, and peak RSS
//     measured in child processes (this test binary re-executed; its
//     TestMain dispatches on DRIFTWATCH_BENCH_CHILD).
//   - audit_test.go: driftwatch audit versus raw plan time and a naive
//     sequential shell loop, with real Terraform.
//   - recheck_test.go: the CPU time (user+sys, children included) of a
//     running daemon's re-check of one unchanged and one drifted
//     15-resource workspace versus a bare plan, and plan + show -json, in
//     initialised directories, with real Terraform (goal: both
//     ratios <= 1.15).
//   - schedule_test.go: internal/schedule's own overhead.
//   - cycle_test.go: a real daemon with 1,000 workspaces: its own CPU
//     while none is due (goal: < 1% of a core), and one full 15-minute
//     cycle with 4 runners of tiny real Terraform roots (goal: every
//     workspace checked in the cycle), with runs/min and CPU per run; the
//     cycle takes over half an hour and skips unless -timeout allows it
//     (DRIFTWATCH_BENCH_WORKSPACES and DRIFTWATCH_BENCH_CADENCE shrink it).
//
// Run them with make bench, or:
//
//	go test -run '^$' -bench . -benchmem ./bench
package bench
