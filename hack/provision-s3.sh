#!/usr/bin/env bash
# hack/provision-s3.sh - build SeaweedFS's `weed` (an S3-compatible object
# store, for the tests of Terraform's s3 backend) from the Go module proxy into
# the tools cache outside the checkout, keyed by version.
#
#   $T = ${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
#   $T/s3/weed-<version>/weed
#       go build ./weed in github.com/seaweedfs/seaweedfs@<version>
#
# Not `go install ...@<version>`: SeaweedFS's go.mod has a replace directive,
# which go install refuses, so we download the module (go mod download) and
# build it in place with its own go.mod and go.sum (-mod=readonly: exactly the
# versions it pins). The build is keyed by version and Go version with a stamp
# file, so a re-run with it cached takes well under a second. It has its own
# lock and temp dir under $T/s3, so it can run alongside the other
# provisioners.
# Progress goes to stderr; stdout ends with exactly this line:
#   WEED=$T/s3/weed-<version>/weed
set -euo pipefail

# The only version the proxy serves here (a pseudo-version of master); it
# supports conditional writes (If-None-Match: * on PutObject), which the s3
# backend's use_lockfile needs.
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6

T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
mkdir -p "$T/s3"
T=$(cd "$T" && pwd -P)
L=$T/s3
OUT=$L/weed-$SEAWEEDFS_VERSION
BIN=$OUT/weed

export GOTOOLCHAIN=local
export GOFLAGS="-buildvcs=false -mod=readonly"
export CGO_ENABLED=0

source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
provision_begin provision-s3 "$L"

key="$SEAWEEDFS_VERSION $(go env GOVERSION)"
if ! stamp_ok weed "$key" "$BIN"; then
	log "building weed (SeaweedFS $SEAWEEDFS_VERSION; ~10 min on 2 cores with a cold module cache)..."
	start=$SECONDS
	# Outside any module, so the checkout's go.mod plays no part.
	dir=$(cd "$L/tmp" && go mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n $dir && -f $dir/go.mod ]] || die "go mod download github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION failed"
	(cd "$dir" && go build -trimpath -ldflags '-s -w' -o "$L/tmp/weed" ./weed) ||
		die "go build weed (SeaweedFS $SEAWEEDFS_VERSION) failed"
	"$L/tmp/weed" version >/dev/null 2>&1 || die "the weed just built does not run"
	mkdir -p "$OUT"
	mv -f "$L/tmp/weed" "$BIN"
	stamp_set weed "$key"
	# Drop builds of other versions.
	for d in "$L"/weed-*; do
		[[ $d == "$OUT" ]] || rm -rf "$d"
	done
	log "weed built in $((SECONDS - start))s"
fi

echo "WEED=$BIN"
