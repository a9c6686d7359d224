#!/usr/bin/env bash
# hack/provision-auth.sh - build oauth2-proxy (an authenticating reverse
# proxy, for the tests of server.auth.mode: proxy behind a real proxy signing
# people in with an OpenID Connect provider) from the Go module proxy into the
# tools cache outside the checkout, keyed by version.
#
#   $T = ${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
#   $T/auth/oauth2-proxy-<version>/oauth2-proxy
#       go build . in github.com/oauth2-proxy/oauth2-proxy/v7@<version>
#
# As hack/provision-s3.sh does: the module is downloaded (go mod download) and
# built in place with its own go.mod and go.sum (-mod=readonly: exactly the
# versions it pins), so a replace directive in its go.mod cannot break the
# build and the checkout's go.mod plays no part. The build is keyed by version
# and Go version with a stamp file, so a re-run with it cached takes well
# under a second. It has its own lock and temp dir under $T/auth, so it can
# run alongside the other provisioners.
# Progress goes to stderr; stdout ends with exactly this line:
#   OAUTH2_PROXY=$T/auth/oauth2-proxy-<version>/oauth2-proxy
set -euo pipefail

OAUTH2_PROXY_VERSION=v7.15.6

T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
mkdir -p "$T/auth"
T=$(cd "$T" && pwd -P)
L=$T/auth
OUT=$L/oauth2-proxy-$OAUTH2_PROXY_VERSION
BIN=$OUT/oauth2-proxy

export GOTOOLCHAIN=local
export GOFLAGS="-buildvcs=false -mod=readonly"
export CGO_ENABLED=0

source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
provision_begin provision-auth "$L"

key="$OAUTH2_PROXY_VERSION $(go env GOVERSION)"
if ! stamp_ok oauth2-proxy "$key" "$BIN"; then
	log "building oauth2-proxy $OAUTH2_PROXY_VERSION (a few minutes on 2 cores with a cold module cache)..."
	start=$SECONDS
	dir=$(cd "$L/tmp" && go mod download -json "github.com/oauth2-proxy/oauth2-proxy/v7@$OAUTH2_PROXY_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n $dir && -f $dir/go.mod ]] || die "go mod download github.com/oauth2-proxy/oauth2-proxy/v7@$OAUTH2_PROXY_VERSION failed"
	(cd "$dir" && go build -trimpath -ldflags "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$OAUTH2_PROXY_VERSION" -o "$L/tmp/oauth2-proxy" .) ||
		die "go build oauth2-proxy $OAUTH2_PROXY_VERSION failed"
	"$L/tmp/oauth2-proxy" --version >/dev/null 2>&1 || die "the oauth2-proxy just built does not run"
	mkdir -p "$OUT"
	mv -f "$L/tmp/oauth2-proxy" "$BIN"
	stamp_set oauth2-proxy "$key"
	# Drop builds of other versions.
	for d in "$L"/oauth2-proxy-*; do
		[[ $d == "$OUT" ]] || rm -rf "$d"
	done
	log "oauth2-proxy built in $((SECONDS - start))s"
fi

echo "OAUTH2_PROXY=$BIN"
