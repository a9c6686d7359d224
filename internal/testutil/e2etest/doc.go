// Package e2etest holds end-to-end tests of the driftwatch binary against
// real Terraform and OpenTofu, real providers from an offline filesystem
// mirror, and drift made behind Terraform's back. `make test` provisions the
// tools (hack/provision.sh) and sets DRIFTWATCH_E2E=1, which turns a missing
// tool into a failure instead of a skip. Nothing imports this package.
package e2etest
