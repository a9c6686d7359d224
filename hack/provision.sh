#!/usr/bin/env bash
# hack/provision.sh - build the real Terraform-side tools driftwatch's tests run
# against, into a tools cache outside the checkout (this machine has no internet:
# everything comes from the Go module proxy or PATH).
#
#   $T = ${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
#   $T/bin/terraform   symlink to `terraform` on PATH (if there is one)
#   $T/bin/tofu        OpenTofu 1.10 built from the Go module proxy
#                      (skip the build with DRIFTWATCH_BUILD_TOFU=0)
#   $T/bin/terraform-1.14, $T/bin/tofu-1.12
#                      the newest Terraform and OpenTofu, built from the proxy
#                      (skip both builds with DRIFTWATCH_BUILD_NEWEST=0)
#   $T/mirror/         filesystem provider mirror, under both registry.terraform.io
#                      and registry.opentofu.org:
#                        hashicorp/local 2.9.0 (built from the proxy)
#                        hashicorp/kubernetes 1.13.4 (built from the proxy, go.mod repaired)
#                        driftwatch/{dwtest,kubernetes,helm} 0.1.0 (internal/testutil/e2etest/testprovider)
#   $T/mirror-next/    driftwatch/dwtest 0.2.0, the same binary (provider upgrade tests)
#   $T/terraformrc     CLI config using only that mirror; use as TF_CLI_CONFIG_FILE
#                      together with CHECKPOINT_DISABLE=1
#
# Every build is keyed by version (the test provider by a hash of its sources) with
# a stamp file, so a re-run with everything cached takes well under a second.
# Progress goes to stderr; stdout ends with exactly these two lines:
#   TF_BINARIES=<space separated absolute paths among $T/bin/terraform $T/bin/tofu
#                $T/bin/terraform-1.14 $T/bin/tofu-1.12>
#   TF_CLI_CONFIG=$T/terraformrc
set -euo pipefail

TOFU_VERSION=v1.10.6
TOFU_NEWEST=v1.12.6 # $T/bin/tofu-1.12
TF_NEWEST=v1.14.9   # $T/bin/terraform-1.14
# The proxy serves Terraform's nested modules (the remote-state backends,
# internal/legacy) only at this pseudo-version: see the Terraform build below.
TF_NESTED_PV=v0.0.0-20250409131005-35645b8fca68
LOCAL_PV=v1.4.1-0.20260806152022-9068a4b7aa37 # hashicorp/local @main (2.9.x code)
LOCAL_VERSION=2.9.0
TESTPROVIDER_VERSION=0.1.0
TESTPROVIDER_NEXT=0.2.0 # in $T/mirror-next: see the test provider below
TESTPROVIDER_NAMES=(dwtest kubernetes helm)
MIRROR_HOSTS=(registry.terraform.io registry.opentofu.org)
PLATFORM=linux_amd64

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
mkdir -p "$T"
T=$(cd "$T" && pwd -P)
BUILD_TOFU=${DRIFTWATCH_BUILD_TOFU:-1}
BUILD_NEWEST=${DRIFTWATCH_BUILD_NEWEST:-1}

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
export CHECKPOINT_DISABLE=1
# The environment may name a CLI config that does not exist; never use it.
export TF_CLI_CONFIG_FILE=$T/terraformrc

# One provisioner at a time per tools dir; temporaries in $T/tmp.
source "$ROOT/hack/lib.sh"
provision_begin provision "$T"
mkdir -p "$T/bin" "$T/build" "$T/pkg" "$T/mirror"

# writable_module MODULE VERSION DEST: fresh writable copy of a proxy module download.
writable_module() {
	local mod=$1 ver=$2 dest=$3 dir
	dir=$(cd "$T" && go mod download -json "$mod@$ver" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n $dir && -d $dir ]] || die "go mod download $mod@$ver gave no directory"
	rm -rf "$dest"
	cp -r "$dir" "$dest"
	chmod -R u+w "$dest"
}

# go_build DIR OUT ARGS...: build in DIR to a temp name, then rename to OUT.
go_build() {
	local dir=$1 out=$2
	shift 2
	local tmp=$T/tmp/build.$$.${out##*/}
	(cd "$dir" && go build -o "$tmp" "$@") || die "go build in $dir failed"
	mv -f "$tmp" "$out"
}

# install_file SRC DEST: atomically put SRC at DEST (hardlink, else copy).
install_file() {
	local src=$1 dest=$2 tmp
	[[ $src -ef $dest ]] && return 0 # already that very file (hardlink)
	mkdir -p "$(dirname "$dest")"
	tmp=$T/tmp/install.$$
	rm -f "$tmp"
	ln "$src" "$tmp" 2>/dev/null || cp "$src" "$tmp"
	chmod 0755 "$tmp"
	mv -f "$tmp" "$dest"
}

GOVER=$(go env GOVERSION)

# --- terraform: whatever is on PATH (never our own symlink) -----------------
tf=""
if p=$(command -v terraform 2>/dev/null) && [[ -n $p ]]; then
	real=$(readlink -f "$p")
	case $real in "$T"/*) ;; *) tf=$real ;; esac
fi
if [[ -n $tf ]]; then
	if [[ "$(readlink "$T/bin/terraform" 2>/dev/null)" != "$tf" ]]; then
		ln -sfn "$tf" "$T/tmp/terraform"
		mv -fT "$T/tmp/terraform" "$T/bin/terraform"
		log "terraform: $T/bin/terraform -> $tf"
	fi
elif [[ -L $T/bin/terraform && ! -e $T/bin/terraform ]]; then
	rm -f "$T/bin/terraform" # dangling: terraform left PATH
fi

# --- OpenTofu built from the module proxy ------------------------------------
# build_tofu VERSION OUT STAMP: OpenTofu VERSION as OUT, unless STAMP says so.
TOFU_LDFLAGS="-X github.com/opentofu/opentofu/version.dev=no"
build_tofu() {
	local ver=$1 out=$2 stamp=$3 key="$1 $GOVER $TOFU_LDFLAGS" src start
	stamp_ok "$stamp" "$key" "$out" && return 0
	log "building OpenTofu $ver (~6 min on 2 cores)..."
	start=$SECONDS
	src=$T/build/opentofu-$ver
	writable_module github.com/opentofu/opentofu "$ver" "$src"
	go_build "$src" "$out" -ldflags "$TOFU_LDFLAGS" ./cmd/tofu
	stamp_set "$stamp" "$key"
	rm -rf "$src"
	log "OpenTofu $ver built in $((SECONDS - start))s"
}
[[ $BUILD_TOFU == 0 ]] || build_tofu "$TOFU_VERSION" "$T/bin/tofu" tofu
[[ $BUILD_NEWEST == 0 ]] || build_tofu "$TOFU_NEWEST" "$T/bin/tofu-1.12" tofu-1.12

# --- the newest Terraform, built from the module proxy -------------------------
# Terraform's module zip lacks its nested modules (each remote-state backend
# but http and inmem, and internal/legacy), which its go.mod replaces with
# their directories, and the proxy serves them only at $TF_NESTED_PV, older
# than the release. This build takes that s3 backend and internal/legacy,
# and leaves the other remote-state backends (azure consul cos gcs kubernetes
# oss pg oci) out: it has none of them (`init` says the backend type is
# unknown), and the tests use local, http and s3 state only. The s3 backend
# of $TF_NESTED_PV predates the release's diagnostics-returning backend and
# state-client methods: patch_tf_s3 renames its error-returning ones and adds
# the release's signatures around them. version.dev=no, as a release build
# sets it: else `terraform version` says 1.14.9-dev.
TF_LDFLAGS="-s -w -X github.com/hashicorp/terraform/version.dev=no"
TF_DROPPED_BACKENDS=(azure consul cos gcs kubernetes oss pg oci)

# patch_tf_s3 DIR: fit the s3 backend in DIR to the release's interfaces.
patch_tf_s3() {
	local s3=$1
	sed -i -E \
		-e 's/^func \(b \*Backend\) Workspaces\(\) \(\[\]string, error\)/func (b *Backend) workspaces() ([]string, error)/' \
		-e 's/^func \(b \*Backend\) DeleteWorkspace\(name string, _ bool\) error/func (b *Backend) deleteWorkspace(name string) error/' \
		-e 's/^func \(b \*Backend\) StateMgr\(name string\) \(statemgr\.Full, error\)/func (b *Backend) stateMgr(name string) (statemgr.Full, error)/' \
		-e 's/\bb\.Workspaces\(\)/b.workspaces()/; s/\bclient\.Delete\(\)/client.deleteObject()/' \
		"$s3/backend_state.go"
	sed -i -E \
		-e 's/^func \(c \*RemoteClient\) Get\(\) \(payload \*remote\.Payload, err error\)/func (c *RemoteClient) getPayload() (payload *remote.Payload, err error)/' \
		-e 's/^func \(c \*RemoteClient\) Put\(data \[\]byte\) error/func (c *RemoteClient) putData(data []byte) error/' \
		-e 's/^func \(c \*RemoteClient\) Delete\(\) error/func (c *RemoteClient) deleteObject() error/' \
		"$s3/client.go"
	cat >"$s3/diags_compat.go" <<'GO'
package s3

import (
	"github.com/hashicorp/terraform/internal/states/remote"
	"github.com/hashicorp/terraform/internal/states/statemgr"
	"github.com/hashicorp/terraform/internal/tfdiags"
)

func (b *Backend) Workspaces() ([]string, tfdiags.Diagnostics) {
	ws, err := b.workspaces()
	return ws, tfdiags.Diagnostics{}.Append(err)
}

func (b *Backend) DeleteWorkspace(name string, _ bool) tfdiags.Diagnostics {
	return tfdiags.Diagnostics{}.Append(b.deleteWorkspace(name))
}

func (b *Backend) StateMgr(name string) (statemgr.Full, tfdiags.Diagnostics) {
	m, err := b.stateMgr(name)
	return m, tfdiags.Diagnostics{}.Append(err)
}

func (c *RemoteClient) Get() (*remote.Payload, tfdiags.Diagnostics) {
	p, err := c.getPayload()
	return p, tfdiags.Diagnostics{}.Append(err)
}

func (c *RemoteClient) Put(data []byte) tfdiags.Diagnostics {
	return tfdiags.Diagnostics{}.Append(c.putData(data))
}

func (c *RemoteClient) Delete() tfdiags.Diagnostics {
	return tfdiags.Diagnostics{}.Append(c.deleteObject())
}
GO
}

tf_key="$TF_NEWEST $TF_NESTED_PV $GOVER $TF_LDFLAGS ${TF_DROPPED_BACKENDS[*]} s3-diags-1"
if [[ $BUILD_NEWEST != 0 ]] && ! stamp_ok terraform-1.14 "$tf_key" "$T/bin/terraform-1.14"; then
	log "building Terraform $TF_NEWEST (~6 min on 2 cores)..."
	start=$SECONDS
	src=$T/build/terraform-$TF_NEWEST
	writable_module github.com/hashicorp/terraform "$TF_NEWEST" "$src"
	for m in backend/remote-state/s3 legacy; do
		writable_module "github.com/hashicorp/terraform/internal/$m" "$TF_NESTED_PV" "$src/internal/$m"
	done
	patch_tf_s3 "$src/internal/backend/remote-state/s3"
	drop=()
	for b in "${TF_DROPPED_BACKENDS[@]}"; do
		drop+=("-droprequire=github.com/hashicorp/terraform/internal/backend/remote-state/$b"
			"-dropreplace=github.com/hashicorp/terraform/internal/backend/remote-state/$b")
	done
	(cd "$src" && go mod edit "${drop[@]}") || die "Terraform $TF_NEWEST: go.mod edit failed"
	sed -i -E '/backend(Azure|Consul|Cos|GCS|Kubernetes|OSS|Pg|OCI)[ .]/d' "$src/internal/backend/init/init.go"
	! grep -Eq 'remote-state/(azure|consul|cos|gcs|kubernetes|oss|pg|oci)"' "$src/internal/backend/init/init.go" ||
		die "Terraform $TF_NEWEST: init.go still imports a dropped backend"
	(export GOFLAGS="-mod=mod -buildvcs=false" && go_build "$src" "$T/tmp/terraform-1.14" -ldflags "$TF_LDFLAGS" .) ||
		die "Terraform $TF_NEWEST: build failed"
	got=$("$T/tmp/terraform-1.14" version -json | sed -n 's/^[[:space:]]*"terraform_version": "\(.*\)",$/\1/p')
	[[ $got == "${TF_NEWEST#v}" ]] || die "Terraform $TF_NEWEST: the build says version '$got'"
	mv -f "$T/tmp/terraform-1.14" "$T/bin/terraform-1.14"
	stamp_set terraform-1.14 "$tf_key"
	rm -rf "$src"
	log "Terraform $TF_NEWEST built in $((SECONDS - start))s"
fi

# --- hashicorp/local provider -------------------------------------------------
local_bin=$T/pkg/local-$LOCAL_PV/terraform-provider-local
local_key="$LOCAL_PV $GOVER"
local_files=()
for h in "${MIRROR_HOSTS[@]}"; do
	local_files+=("$T/mirror/$h/hashicorp/local/$LOCAL_VERSION/$PLATFORM/terraform-provider-local_v$LOCAL_VERSION")
done
if ! stamp_ok local "$local_key" "$local_bin" "${local_files[@]}"; then
	if ! stamp_ok local "$local_key" "$local_bin"; then
		log "building hashicorp/local $LOCAL_VERSION ($LOCAL_PV, ~45s)..."
		start=$SECONDS
		src=$T/build/terraform-provider-local-$LOCAL_PV
		writable_module github.com/hashicorp/terraform-provider-local "$LOCAL_PV" "$src"
		mkdir -p "$(dirname "$local_bin")"
		go_build "$src" "$local_bin" .
		rm -rf "$src"
		log "hashicorp/local built in $((SECONDS - start))s"
	fi
	for f in "${local_files[@]}"; do install_file "$local_bin" "$f"; done
	stamp_set local "$local_key"
fi

# --- hashicorp/kubernetes provider (the real one, for signal precision) -------
# The module proxy serves only v1.13.4 of it, whose go.mod no longer builds as
# published: its acceptance tests (deleted here) import other providers, and
# k8s.io/kubectl requires vbom.ml/util, which the proxy refuses and nothing the
# provider compiles imports (an empty local module stands in). golang.org/x/sys
# of 2020 does not build with today's Go, and json-iterator needs reflect2
# v1.0.2 at run time on Go >= 1.18.
KPROV_VERSION=v1.13.4
KPROV_XSYS=v0.50.0
kprov_bin=$T/pkg/kubernetes-$KPROV_VERSION/terraform-provider-kubernetes
kprov_key="$KPROV_VERSION $KPROV_XSYS $GOVER"
kprov_files=()
for h in "${MIRROR_HOSTS[@]}"; do
	kprov_files+=("$T/mirror/$h/hashicorp/kubernetes/${KPROV_VERSION#v}/$PLATFORM/terraform-provider-kubernetes_$KPROV_VERSION")
done
if ! stamp_ok kubernetes "$kprov_key" "$kprov_bin" "${kprov_files[@]}"; then
	if ! stamp_ok kubernetes "$kprov_key" "$kprov_bin"; then
		log "building hashicorp/kubernetes $KPROV_VERSION (~2 min)..."
		start=$SECONDS
		src=$T/build/terraform-provider-kubernetes-$KPROV_VERSION
		writable_module github.com/hashicorp/terraform-provider-kubernetes "$KPROV_VERSION" "$src"
		rm -rf "$src/vendor"
		rm -f "$src"/kubernetes/*_test.go
		mkdir -p "$src/third_party/vbom.ml/util"
		printf 'module vbom.ml/util\n' >"$src/third_party/vbom.ml/util/go.mod"
		(cd "$src" && go mod edit \
			-droprequire=github.com/terraform-providers/terraform-provider-aws \
			-droprequire=github.com/terraform-providers/terraform-provider-azurerm \
			-droprequire=github.com/hashicorp/terraform-provider-google \
			-droprequire=github.com/terraform-providers/terraform-provider-random \
			-droprequire=cloud.google.com/go/storage \
			-droprequire=github.com/Azure/go-autorest/autorest \
			-droprequire=github.com/Azure/go-autorest/autorest/azure/cli \
			-droprequire=github.com/Azure/go-autorest/autorest/validation \
			-droprequire=github.com/aws/aws-sdk-go \
			-droprequire=google.golang.org/api \
			-dropreplace=github.com/Azure/go-autorest/autorest \
			-dropreplace=golang.org/x/sys \
			-dropreplace=sigs.k8s.io/kustomize/pkg/transformers \
			-dropreplace=sigs.k8s.io/kustomize/pkg/transformers/config \
			-replace=vbom.ml/util=./third_party/vbom.ml/util \
			-require=golang.org/x/sys@$KPROV_XSYS \
			-require=github.com/modern-go/reflect2@v1.0.2 &&
			GOFLAGS=-mod=mod go mod tidy) || die "hashicorp/kubernetes $KPROV_VERSION: go.mod repair failed"
		mkdir -p "$(dirname "$kprov_bin")"
		(export CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" && go_build "$src" "$kprov_bin" -trimpath -ldflags "-s -w" .) ||
			die "hashicorp/kubernetes $KPROV_VERSION: build failed"
		rm -rf "$src"
		log "hashicorp/kubernetes $KPROV_VERSION built in $((SECONDS - start))s"
	fi
	for f in "${kprov_files[@]}"; do install_file "$kprov_bin" "$f"; done
	stamp_set kubernetes "$kprov_key"
fi

# --- driftwatch test provider (dwtest, kubernetes, helm) ------------------------
tp_src=$ROOT/internal/testutil/e2etest/testprovider
[[ -f $tp_src/go.mod ]] || die "missing $tp_src/go.mod"
# Keyed by the Go version and a hash of the non-test sources (relative paths, so
# a fresh clone of the same code reuses the build).
tp_hash=$(cd "$tp_src" && {
	echo "$GOVER"
	find . -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) -print0 |
		LC_ALL=C sort -z | xargs -0 sha256sum
} | sha256sum | cut -c1-16)
tp_bin=$T/pkg/testprovider-$tp_hash/terraform-provider-dwtest
tp_key=$tp_hash
tp_files=()
for n in "${TESTPROVIDER_NAMES[@]}"; do
	for h in "${MIRROR_HOSTS[@]}"; do
		tp_files+=("$T/mirror/$h/driftwatch/$n/$TESTPROVIDER_VERSION/$PLATFORM/terraform-provider-${n}_v$TESTPROVIDER_VERSION")
	done
done
# The next release of dwtest (the same binary: its version comes from its
# file name) stands in a mirror of its own, which only the tests of a
# provider upgrade add to their CLI config: everything else keeps
# resolving an unconstrained driftwatch/dwtest to 0.1.0.
for h in "${MIRROR_HOSTS[@]}"; do
	tp_files+=("$T/mirror-next/$h/driftwatch/dwtest/$TESTPROVIDER_NEXT/$PLATFORM/terraform-provider-dwtest_v$TESTPROVIDER_NEXT")
done
if ! stamp_ok testprovider "$tp_key" "$tp_bin" "${tp_files[@]}"; then
	if [[ ! -x $tp_bin ]]; then
		log "building test provider ($tp_hash)..."
		mkdir -p "$(dirname "$tp_bin")"
		go_build "$tp_src" "$tp_bin" .
	fi
	for f in "${tp_files[@]}"; do install_file "$tp_bin" "$f"; done
	stamp_set testprovider "$tp_key"
	# Drop builds of older sources.
	for d in "$T"/pkg/testprovider-*; do
		[[ $d == "$(dirname "$tp_bin")" ]] || rm -rf "$d"
	done
	log "test provider installed as driftwatch/{${TESTPROVIDER_NAMES[*]}} $TESTPROVIDER_VERSION"
fi

# --- CLI config ----------------------------------------------------------------
rc="provider_installation {
  filesystem_mirror {
    path    = \"$T/mirror\"
    include = [\"*/*/*\"]
  }
}
disable_checkpoint = true
"
if [[ ! -f $T/terraformrc || "$(<"$T/terraformrc")"$'\n' != "$rc" ]]; then
	printf '%s' "$rc" >"$T/tmp/terraformrc"
	mv -f "$T/tmp/terraformrc" "$T/terraformrc"
fi

# --- result ----------------------------------------------------------------------
bins=()
for b in "$T/bin/terraform" "$T/bin/tofu" "$T/bin/terraform-1.14" "$T/bin/tofu-1.12"; do
	[[ -x $b ]] && bins+=("$b")
done
((${#bins[@]})) || die "neither terraform on PATH nor OpenTofu (DRIFTWATCH_BUILD_TOFU=$BUILD_TOFU)"
echo "TF_BINARIES=${bins[*]}"
echo "TF_CLI_CONFIG=$T/terraformrc"
