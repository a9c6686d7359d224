#!/usr/bin/env bash
# hack/provision-lint.sh - build golangci-lint from the Go module proxy into the
# tools cache outside the checkout, keyed by version.
#
#   $T = ${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
#   $T/lint/golangci-lint-<version>/golangci-lint
#       go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@<version>
#
# The build is keyed by version and Go version with a stamp file, so a re-run
# with it cached takes well under a second. It has its own lock and temp dir
# under $T/lint, so it can run alongside hack/provision.sh and
# hack/provision-k8s.sh.
# Progress goes to stderr; stdout ends with exactly this line:
#   GOLANGCI_LINT=$T/lint/golangci-lint-<version>/golangci-lint
set -euo pipefail

# The newest release the proxy serves that builds with Go 1.26:
#   go list -m -versions github.com/golangci/golangci-lint/v2
GOLANGCI_LINT_VERSION=v2.15.0

T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
mkdir -p "$T/lint"
T=$(cd "$T" && pwd -P)
L=$T/lint
OUT=$L/golangci-lint-$GOLANGCI_LINT_VERSION
BIN=$OUT/golangci-lint

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false

# One provisioner at a time, with a lock of our own: hack/provision.sh holds
# $T/.lock and empties $T/tmp.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
provision_begin provision-lint "$L"

key="$GOLANGCI_LINT_VERSION $(go env GOVERSION)"
if [[ ! -x $BIN || ! -f $L/stamps/golangci-lint || "$(<"$L/stamps/golangci-lint")" != "$key" ]]; then
	log "building golangci-lint $GOLANGCI_LINT_VERSION (~4 min on 2 cores with a cold module cache)..."
	start=$SECONDS
	# Outside any module, so the checkout's go.mod plays no part.
	(cd "$L/tmp" && GOBIN=$L/tmp/bin go install \
		"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION") ||
		die "go install golangci-lint@$GOLANGCI_LINT_VERSION failed"
	mkdir -p "$OUT"
	mv -f "$L/tmp/bin/golangci-lint" "$BIN"
	printf '%s\n' "$key" >"$L/tmp/stamp" && mv -f "$L/tmp/stamp" "$L/stamps/golangci-lint"
	# Drop builds of other versions.
	for d in "$L"/golangci-lint-*; do
		[[ $d == "$OUT" ]] || rm -rf "$d"
	done
	log "golangci-lint $GOLANGCI_LINT_VERSION built in $((SECONDS - start))s"
fi

echo "GOLANGCI_LINT=$BIN"
