// Package bench holds driftwatch's performance benchmarks, measured side by
// side in one run so that results are ratios on the same machine (DESIGN.md
// section 9). It has no production code; everything is in _test.go files.
//
//	go test -run '^$' -bench . -benchtime 5x ./bench
//
// plan_test.go: parsing and classifying a generated ~50 MB plan JSON with
// internal/planparse + internal/policy versus json.Unmarshal into
// tfjson.Plan (time, allocation, throughput, and peak RSS in child
// processes).
package bench
