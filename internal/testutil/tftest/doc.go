// Package tftest finds the Terraform/OpenTofu binaries and the offline CLI
// config that `make tools` provisions, for tests that run real Terraform.
// Under `make test` (DRIFTWATCH_E2E=1) a missing tool fails the test; a
// plain `go test` on a machine without them skips.
//
// Main, used as TestMain, fails a test binary when a process of one of its
// runs (one carrying the run marker) outlived its run directory, and kills
// it.
//
// Only tests import it. It imports no driftwatch package (the marker's
// name, DRIFTWATCH_RUN_MARKER, is written out rather than taken from
// terraform/sandbox), so any package's tests may use it.
package tftest
