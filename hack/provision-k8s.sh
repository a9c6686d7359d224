#!/usr/bin/env bash
# hack/provision-k8s.sh - build a real Kubernetes control plane (no kubelet) and
# helm for driftwatch's cluster tests (internal/testutil/kubetest), into the tools cache
# outside the checkout (everything from the Go module proxy or Debian packages).
#
#   $T = ${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
#   $T/k8s/<version>/kube-apiserver           built from the Go module proxy through a
#   $T/k8s/<version>/kube-controller-manager  wrapper module (k8s.io/kubernetes <version>)
#   $T/k8s/<version>/etcd                     symlink to Debian's etcd (etcd-server, 3.4)
#   $T/k8s/<version>/kubectl                  symlink to kubectl on PATH, else built in the
#                                             same wrapper (force with DRIFTWATCH_BUILD_KUBECTL=1)
#   $T/k8s/<version>/helm                     go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION
#
# The directory also works as KUBEBUILDER_ASSETS for controller-runtime's envtest.
# Every build is keyed by version with a stamp file, so a re-run with everything
# cached takes well under a second. It has its own lock and temp dir under $T/k8s,
# so it can run alongside hack/provision.sh.
# Progress goes to stderr; stdout ends with exactly this line:
#   KUBE_BIN_DIR=$T/k8s/<version>
set -euo pipefail

KUBE_VERSION=v1.33.13
# The staging modules (k8s.io/api, ...) are published as v0.<minor>.<patch>.
STAGING_VERSION=v0.33.13
# Only v0.33.3 of k8s.io/sample-apiserver is served by the proxy.
SAMPLE_APISERVER_VERSION=v0.33.3
HELM_VERSION=v3.22.0

T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
mkdir -p "$T/k8s"
T=$(cd "$T" && pwd -P)
K=$T/k8s
OUT=$K/$KUBE_VERSION
BUILD_KUBECTL=${DRIFTWATCH_BUILD_KUBECTL:-0}

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false

# One provisioner at a time per tools dir, with a lock of our own:
# hack/provision.sh holds $T/.lock and empties $T/tmp.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
provision_begin provision-k8s "$K"
mkdir -p "$OUT"

# link_into NAME TARGET: atomically make $OUT/NAME a symlink to TARGET.
link_into() {
	local name=$1 target=$2
	[[ "$(readlink "$OUT/$name" 2>/dev/null)" == "$target" ]] && return 0
	ln -sfn "$target" "$K/tmp/link-$name"
	mv -fT "$K/tmp/link-$name" "$OUT/$name"
	log "$name: $OUT/$name -> $target"
}

# on_path NAME: absolute path of NAME on PATH, unless it resolves into $T.
on_path() {
	local p real
	p=$(command -v "$1" 2>/dev/null) || return 1
	[[ -n $p ]] || return 1
	real=$(readlink -f "$p")
	case $real in "$T"/*) return 1 ;; esac
	printf '%s\n' "$real"
}

GOVER=$(go env GOVERSION)

# --- etcd: Debian's etcd-server ---------------------------------------------------
if ! etcd_bin=$(on_path etcd); then
	[[ $(id -u) == 0 ]] || die "etcd is not installed and we are not root: apt-get install etcd-server"
	log "installing Debian etcd-server..."
	start=$SECONDS
	export DEBIAN_FRONTEND=noninteractive
	apt_lock
	apt-get update -qq >&2 || die "apt-get update failed"
	# Debian's package would start an etcd on the default ports where an init
	# system runs; policy-rc.d forbids that (tests start their own).
	policy_rc_made=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && policy_rc_made=1
	fi
	apt-get install -y -qq --no-install-recommends etcd-server >&2 || {
		((policy_rc_made)) && rm -f /usr/sbin/policy-rc.d
		die "apt-get install etcd-server failed"
	}
	((policy_rc_made)) && rm -f /usr/sbin/policy-rc.d
	apt_unlock
	etcd_bin=$(on_path etcd) || die "etcd-server installed but no etcd on PATH"
	log "etcd-server installed in $((SECONDS - start))s"
fi
link_into etcd "$etcd_bin"

# --- kubectl: the one on PATH, else built below -------------------------------------
kubectl_bin=""
if [[ $BUILD_KUBECTL == 0 ]] && kubectl_bin=$(on_path kubectl); then
	link_into kubectl "$kubectl_bin"
else
	kubectl_bin=""
	[[ -L $OUT/kubectl ]] && rm -f "$OUT/kubectl" # was a symlink; build our own
fi

# --- kube-apiserver, kube-controller-manager (and kubectl): wrapper module ---------
KUBE_LDFLAGS=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	KUBE_LDFLAGS+="-X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=33 -X $pkg.gitTreeState=clean "
done
KUBE_LDFLAGS+="-s -w"
kube_cmds=(kube-apiserver kube-controller-manager)
[[ -z $kubectl_bin ]] && kube_cmds+=(kubectl)
kube_files=()
for c in "${kube_cmds[@]}"; do kube_files+=("$OUT/$c"); done
kube_key="$KUBE_VERSION $SAMPLE_APISERVER_VERSION $GOVER $KUBE_LDFLAGS ${kube_cmds[*]}"
if ! stamp_ok kube "$kube_key" "${kube_files[@]}"; then
	log "building ${kube_cmds[*]} $KUBE_VERSION (~8-15 min cold on 2 cores)..."
	start=$SECONDS
	w=$K/wrapper-$KUBE_VERSION # kept: a second run resolves nothing from the network
	mkdir -p "$w"
	gomod=$(cd "$K/tmp" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n $gomod && -f $gomod ]] || die "go mod download k8s.io/kubernetes@$KUBE_VERSION gave no go.mod"
	{
		echo "// Generated by hack/provision-k8s.sh: builds k8s.io/kubernetes commands from the module proxy."
		echo "module driftwatch.local/kubewrapper"
		echo
		echo "go 1.24.0"
		echo
		echo "godebug default=go1.24"
		echo
		echo "require k8s.io/kubernetes $KUBE_VERSION"
		echo
		echo "replace ("
		# k8s.io/kubernetes replaces every staging module with ./staging/src/...;
		# point each at its published twin instead.
		sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/.*$#\1#p' "$gomod" |
			while read -r m; do
				case $m in
				k8s.io/sample-cli-plugin | k8s.io/sample-controller) ;;
				k8s.io/sample-apiserver) printf '\t%s => %s %s\n' "$m" "$m" "$SAMPLE_APISERVER_VERSION" ;;
				*) printf '\t%s => %s %s\n' "$m" "$m" "$STAGING_VERSION" ;;
				esac
			done
		echo ")"
	} >"$K/tmp/go.mod"
	grep -q 'k8s.io/client-go => k8s.io/client-go' "$K/tmp/go.mod" || die "no staging replaces found in $gomod"
	if ! cmp -s "$K/tmp/go.mod" "$w/go.mod"; then
		mv -f "$K/tmp/go.mod" "$w/go.mod"
		rm -f "$w/go.sum"
	fi
	pkgs=()
	for c in "${kube_cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	(cd "$w" && go get "${pkgs[@]/%/@$KUBE_VERSION}" >&2) || die "go get in $w failed"
	mkdir -p "$K/tmp/bin"
	(cd "$w" && go build -trimpath -ldflags "$KUBE_LDFLAGS" -o "$K/tmp/bin/" "${pkgs[@]}") ||
		die "go build in $w failed"
	for c in "${kube_cmds[@]}"; do mv -f "$K/tmp/bin/$c" "$OUT/$c"; done
	stamp_set kube "$kube_key"
	log "${kube_cmds[*]} built in $((SECONDS - start))s"
fi
"$OUT/kube-apiserver" --version 2>/dev/null | grep -qF "$KUBE_VERSION" ||
	die "$OUT/kube-apiserver does not report $KUBE_VERSION"

# --- helm ---------------------------------------------------------------------------
# Stamped like helm's own Makefile: its version, and the Kubernetes version of
# its client-go as the default .Capabilities.KubeVersion (unstamped it is
# v1.20, below the chart's kubeVersion) and for lint's deprecation checks.
helm_key="$HELM_VERSION $GOVER v2"
if ! stamp_ok helm "$helm_key" "$OUT/helm"; then
	log "building helm $HELM_VERSION (~2.5 min cold)..."
	start=$SECONDS
	helm_gomod=$(cd "$K/tmp" && go mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n $helm_gomod && -f $helm_gomod ]] || die "go mod download helm.sh/helm/v3@$HELM_VERSION gave no go.mod"
	k8s_minor=$(sed -n 's#^[[:space:]]*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$helm_gomod" | head -n1)
	[[ -n $k8s_minor ]] || die "no k8s.io/client-go requirement in $helm_gomod"
	helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
	helm_ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
	for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
		helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
	done
	mkdir -p "$K/tmp/gobin"
	(cd "$K/tmp" && GOBIN=$K/tmp/gobin go install -trimpath -ldflags "$helm_ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2) ||
		die "go install helm@$HELM_VERSION failed"
	mv -f "$K/tmp/gobin/helm" "$OUT/helm"
	stamp_set helm "$helm_key"
	log "helm built in $((SECONDS - start))s"
fi

# --- result --------------------------------------------------------------------------
for b in kube-apiserver kube-controller-manager etcd kubectl helm; do
	[[ -x $OUT/$b ]] || die "missing $OUT/$b"
done
echo "KUBE_BIN_DIR=$OUT"
