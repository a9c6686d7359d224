#!/usr/bin/env bash
# hack/provision-image.sh - a Docker engine of our own and the base images the
# Dockerfile names, assembled offline (no registry is reachable here: only
# Debian's archive, as apt is configured, and the Go module proxy).
#
#   $T = ${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
#   $T/image/docker/     dockerd from Debian's docker.io, ours alone (it never touches
#                        a system docker): data-root data/, exec-root run/, docker.sock,
#                        dockerd.pid, dockerd.log; no bridge, no iptables (containers
#                        use --network host or none). Started if not running.
#   $T/image/cache/      root filesystem tarballs, so a wiped data-root re-imports
#                        in seconds instead of re-running debootstrap
#   driftwatch-local/debian:<suite>-slim-<key>
#                        debootstrap --variant=minbase from the mirror apt uses, slimmed
#                        like the official debian:*-slim, with the host's apt sources
#                        and Acquire:: settings (proxy, validity) so apt in a
#                        container reaches the archive as the host does
#   driftwatch-local/golang:<go version>-<suite>-<key>
#                        that + the host's Go toolchain ($(go env GOROOT)), its module
#                        proxy settings and the host's CA bundle (the egress here
#                        re-signs TLS), for the Dockerfile's build stage
#
# Keys cover the suite, the Go version and SCRIPT_VERSION; a re-run with
# everything in place takes about a second. `hack/provision-image.sh stop`
# stops our dockerd.
# Progress goes to stderr; stdout ends with exactly these five lines:
#   DOCKER_HOST=unix://$T/image/docker/docker.sock
#   DOCKER=<docker CLI to build with>
#   DOCKER_BUILDKIT=1     (that CLI: one with buildx, or a CLI older than 23 such
#                         as Debian's, which drives the engine's built-in BuildKit)
#   BUILD_IMAGE=driftwatch-local/golang:...
#   RUNTIME_IMAGE=driftwatch-local/debian:...
set -euo pipefail

SCRIPT_VERSION=1 # bump when the images below change
SUITE=bookworm
# Storage drivers to try, in order; the first that starts is remembered.
STORAGE_DRIVERS=${DRIFTWATCH_DOCKER_STORAGE_DRIVERS:-overlay2 fuse-overlayfs vfs}

T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
mkdir -p "$T/image"
T=$(cd "$T" && pwd -P)
I=$T/image
D=$I/docker
SOCK=$D/docker.sock
export DOCKER_HOST=unix://$SOCK

source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

docker_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# our_dockerd_pid: pid of our dockerd from its pidfile, if that process is a dockerd.
our_dockerd_pid() {
	local pid
	pid=$(cat "$D/dockerd.pid" 2>/dev/null) || return 1
	[[ -n $pid && "$(cat "/proc/$pid/comm" 2>/dev/null)" == dockerd ]] || return 1
	echo "$pid"
}

stop_dockerd() {
	local pid i
	pid=$(our_dockerd_pid) || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null || true
}

if [[ ${1:-} == stop ]]; then
	PROVISION_NAME=provision-image
	stop_dockerd
	exit 0
fi

provision_begin provision-image "$I"
mkdir -p "$D" "$I/cache"
[[ $(id -u) == 0 ]] || docker_up || die "dockerd needs root: run as root, or start a docker engine and point DOCKER_HOST at it"

# --- Debian packages: docker.io, debootstrap ------------------------------------
apt_install() { # PKG...: install from Debian without starting any service
	log "installing $* from Debian..."
	local start=$SECONDS policy_rc_made=0
	export DEBIAN_FRONTEND=noninteractive
	apt_lock
	apt-get update -qq >"$I/tmp/apt.log" 2>&1 || die "apt-get update failed: $(tail -n 5 "$I/tmp/apt.log")"
	# Where an init system runs, docker.io would start the system docker:
	# policy-rc.d forbids that (we run our own, below).
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && policy_rc_made=1
	fi
	apt-get install -y -qq --no-install-recommends "$@" >>"$I/tmp/apt.log" 2>&1 || {
		((policy_rc_made)) && rm -f /usr/sbin/policy-rc.d
		die "apt-get install $* failed: $(tail -n 5 "$I/tmp/apt.log")"
	}
	((policy_rc_made)) && rm -f /usr/sbin/policy-rc.d
	apt_unlock
	log "$* installed in $((SECONDS - start))s"
}
if [[ $(id -u) == 0 ]]; then
	pkgs=()
	command -v dockerd >/dev/null || pkgs+=(docker.io)
	command -v debootstrap >/dev/null || pkgs+=(debootstrap)
	((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
fi

# --- our dockerd -------------------------------------------------------------------
# start_dockerd DRIVER: start it detached (no inherited lock or pipes); true once it answers.
start_dockerd() {
	local driver=$1 pid i
	[[ -f $D/daemon.json ]] || echo '{}' >"$D/daemon.json" # never read /etc/docker/daemon.json
	rm -f "$SOCK"
	our_dockerd_pid >/dev/null || rm -f "$D/dockerd.pid"
	log "starting dockerd (storage driver $driver), log in $D/dockerd.log"
	# Detached: a session of its own, and no inherited descriptors (our lock
	# on fd 9, make's jobserver, a caller's pipe that would never see EOF).
	setsid bash -c 'for f in /proc/self/fd/*; do f=${f##*/}; ((f > 2)) && eval "exec $f>&-"; done 2>/dev/null; exec "$@"' dockerd dockerd \
		--host "unix://$SOCK" --data-root "$D/data" --exec-root "$D/run" --pidfile "$D/dockerd.pid" \
		--config-file "$D/daemon.json" --storage-driver "$driver" \
		--bridge none --iptables=false --ip6tables=false --ip-masq=false --ip-forward=false \
		--userland-proxy=false --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent /driftwatch-docker \
		</dev/null >>"$D/dockerd.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		if docker_up; then
			[[ "$(docker info --format '{{.Driver}}' 2>/dev/null)" == "$driver" ]] && return 0
			break
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	log "dockerd did not start with storage driver $driver: $(tail -n 3 "$D/dockerd.log" | tr '\n' ' ')"
	return 1
}

if ! docker_up; then
	[[ $(id -u) == 0 ]] || die "our dockerd is not running and we are not root"
	started=0
	drivers=$STORAGE_DRIVERS
	# The driver that worked last time first: another one would not see its images.
	[[ -s $D/storage-driver ]] && drivers="$(<"$D/storage-driver") $drivers"
	for drv in $drivers; do
		case $drv in
		fuse-overlayfs)
			[[ -e /dev/fuse ]] || continue
			command -v fuse-overlayfs >/dev/null || apt_install fuse-overlayfs || continue
			;;
		esac
		if start_dockerd "$drv"; then
			echo "$drv" >"$D/storage-driver"
			started=1
			break
		fi
	done
	((started)) || die "dockerd started with none of: $drivers (see $D/dockerd.log)"
	log "dockerd $(docker version --format '{{.Server.Version}}') up on $DOCKER_HOST"
fi

# --- base images ------------------------------------------------------------------
image_ok() { docker image inspect "$1" >/dev/null 2>&1; }

GOROOT_HOST=$(go env GOROOT)
GOVER=$(go env GOVERSION) # go1.26.8
key=$(printf '%s\n' "$SCRIPT_VERSION" "$SUITE" | sha256sum | cut -c1-12)
RUNTIME_IMAGE=driftwatch-local/debian:$SUITE-slim-$key
go_key=$(printf '%s\n' "$SCRIPT_VERSION" "$SUITE" "$GOVER" "$(go env GOPROXY GOSUMDB GOFLAGS GONOSUMDB GOPRIVATE GONOPROXY GOINSECURE)" |
	sha256sum | cut -c1-12)
BUILD_IMAGE=driftwatch-local/golang:${GOVER#go}-$SUITE-$go_key
rootfs_tar=$I/cache/debian-$SUITE-slim-$key.tar

# apt_repos: "URI<TAB>SUITE<TAB>COMPONENT" for every Debian index apt uses here.
apt_repos() {
	apt-get indextargets --format '$(REPO_URI)	$(RELEASE)	$(COMPONENT)	$(ORIGIN)' 'Identifier: Packages' 2>/dev/null |
		awk -F'\t' -v s="$SUITE" '$4 == "Debian" && ($2 == s || index($2, s "-") == 1) { print $1 "\t" $2 "\t" $3 }' | sort -u
}

build_rootfs() {
	local start=$SECONDS repos mirror r="$I/tmp/rootfs"
	command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
	repos=$(apt_repos)
	[[ -n $repos ]] || { apt_lock && apt-get update -qq >&2 && apt_unlock && repos=$(apt_repos); }
	mirror=${DRIFTWATCH_DEBIAN_MIRROR:-$(awk -F'\t' -v s="$SUITE" '$2 == s { print $1; exit }' <<<"$repos")}
	mirror=${mirror:-http://deb.debian.org/debian/}
	log "debootstrap --variant=minbase $SUITE from $mirror (~2-4 min)..."
	debootstrap --variant=minbase --arch=amd64 "$SUITE" "$r" "$mirror" >"$I/tmp/debootstrap.log" 2>&1 ||
		die "debootstrap failed: $(tail -n 5 "$I/tmp/debootstrap.log")"

	# apt: the host's Debian sources and Acquire:: settings (proxy, validity of
	# a snapshot), so apt in a container reaches the archive as the host does.
	{
		echo "# written by driftwatch hack/provision-image.sh from the host's apt configuration"
		if [[ -n $repos ]]; then
			awk -F'\t' '{ c[$1 "\t" $2] = c[$1 "\t" $2] " " $3 } END { for (k in c) { split(k, a, "\t"); print "deb " a[1] " " a[2] c[k] } }' <<<"$repos" | sort
		else
			echo "deb $mirror $SUITE main"
		fi
	} >"$r/etc/apt/sources.list"
	rm -f "$r/etc/apt/sources.list.d/"*
	apt-config dump | grep -E '^Acquire::((https?|ftp)::Proxy|Check-Valid-Until|Check-Date)' \
		>"$r/etc/apt/apt.conf.d/90driftwatch-host" || true
	# Slim, as the official debian:*-slim (debuerreotype): no docs, man pages,
	# locales; no apt caches or package lists in any layer.
	cat >"$r/etc/dpkg/dpkg.cfg.d/docker-slim" <<-'EOF'
		path-exclude /usr/share/doc/*
		path-include /usr/share/doc/*/copyright
		path-exclude /usr/share/man/*
		path-exclude /usr/share/groff/*
		path-exclude /usr/share/info/*
		path-exclude /usr/share/lintian/*
		path-exclude /usr/share/linda/*
		path-exclude /usr/share/locale/*
		path-include /usr/share/locale/locale.alias
	EOF
	cat >"$r/etc/apt/apt.conf.d/docker-clean" <<-'EOF'
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
	EOF
	echo 'Acquire::Languages "none";' >"$r/etc/apt/apt.conf.d/docker-no-languages"
	echo 'Acquire::GzipIndexes "true";' >"$r/etc/apt/apt.conf.d/docker-gzip-indexes"
	printf 'APT::AutoRemove::RecommendsImportant "false";\nAPT::AutoRemove::SuggestsImportant "false";\n' \
		>"$r/etc/apt/apt.conf.d/docker-autoremove-suggests"
	find "$r/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
	find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
	rm -rf "$r"/usr/share/{man,groff,info,lintian,linda}/* "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* \
		"$r"/var/cache/debconf/*-old "$r"/var/lib/dpkg/*-old "$r"/var/log/* "$r"/tmp/* "$r"/root/.bash_history
	find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
	: >"$r/etc/machine-id"
	rm -f "$r/etc/hostname" "$r/etc/resolv.conf" # docker provides them
	tar --numeric-owner --xattrs -C "$r" -cf "$I/tmp/rootfs.tar" .
	mv -f "$I/tmp/rootfs.tar" "$rootfs_tar"
	rm -rf "$r"
	log "root filesystem built in $((SECONDS - start))s: $rootfs_tar ($(du -h "$rootfs_tar" | cut -f1))"
}

if ! image_ok "$RUNTIME_IMAGE"; then
	[[ -f $rootfs_tar ]] || build_rootfs
	docker import --change 'CMD ["bash"]' "$rootfs_tar" "$RUNTIME_IMAGE" >/dev/null ||
		die "docker import $rootfs_tar failed"
	log "imported $RUNTIME_IMAGE"
fi
docker run --rm --network none "$RUNTIME_IMAGE" true ||
	die "cannot run a container with dockerd here (see $D/dockerd.log)"

if ! image_ok "$BUILD_IMAGE"; then
	start=$SECONDS
	log "assembling $BUILD_IMAGE from $RUNTIME_IMAGE and $GOROOT_HOST..."
	ctx=$I/tmp/golang
	mkdir -p "$ctx"
	cp -al "$GOROOT_HOST" "$ctx/go" 2>/dev/null || cp -a "$GOROOT_HOST" "$ctx/go"
	# The CA bundle the host trusts (here: with the egress proxy's CA in it), so
	# `go mod download` in a build reaches the module proxy as the host does.
	cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$ctx/ca-certificates.crt"
	{
		echo "FROM $RUNTIME_IMAGE"
		echo "COPY go /usr/local/go"
		echo "COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt"
		echo "ENV GOLANG_VERSION=${GOVER#go} GOPATH=/go GOTOOLCHAIN=local"
		echo "ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		for v in GOPROXY GOSUMDB GOFLAGS GONOSUMDB GOPRIVATE GONOPROXY GOINSECURE; do
			val=$(go env "$v")
			[[ -n $val ]] && printf 'ENV %s="%s"\n' "$v" "$val"
		done
		echo "WORKDIR /go"
	} >"$ctx/Dockerfile"
	DOCKER_BUILDKIT=0 docker build -q --network none -t "$BUILD_IMAGE" "$ctx" >/dev/null 2>"$I/tmp/golang-build.log" ||
		die "building $BUILD_IMAGE failed: $(tail -n 5 "$I/tmp/golang-build.log")"
	rm -rf "$ctx"
	docker run --rm --network none "$BUILD_IMAGE" go version | grep -qF "$GOVER " ||
		die "$BUILD_IMAGE does not run $GOVER"
	log "$BUILD_IMAGE assembled in $((SECONDS - start))s"
fi

# Drop our images of other keys (and their tarballs).
for img in $(docker image ls --format '{{.Repository}}:{{.Tag}}' 'driftwatch-local/*'); do
	[[ $img == "$RUNTIME_IMAGE" || $img == "$BUILD_IMAGE" ]] || docker image rm "$img" >/dev/null 2>&1 || true
done
for f in "$I"/cache/debian-*.tar; do
	[[ ! -e $f || $f == "$rootfs_tar" ]] || rm -f "$f"
done

# --- the builder: BuildKit (the Dockerfile needs it) ---------------------------------
# Debian's docker.io has no buildx, but its own CLI (20.10) drives the
# engine's built-in BuildKit; a newer CLI needs buildx for it.
docker_cli=""
for c in $(type -ap docker) /usr/bin/docker; do
	[[ -x $c ]] || continue
	if "$c" buildx version >/dev/null 2>&1; then
		docker_cli=$c
		break
	fi
	v=$("$c" version --format '{{.Client.Version}}' 2>/dev/null) || continue
	if [[ ${v%%.*} =~ ^[0-9]+$ ]] && ((${v%%.*} < 23)); then
		docker_cli=$c
		break
	fi
done
[[ -n $docker_cli ]] || die "no docker CLI with BuildKit (buildx, or Debian's docker.io CLI): apt-get install docker.io"

echo "DOCKER_HOST=$DOCKER_HOST"
echo "DOCKER=$docker_cli"
echo "DOCKER_BUILDKIT=1"
echo "BUILD_IMAGE=$BUILD_IMAGE"
echo "RUNTIME_IMAGE=$RUNTIME_IMAGE"
