#!/usr/bin/env bash
# hack/provision-pg.sh - PostgreSQL for the tests of the postgres store
# driver: Debian's postgresql package, whose initdb and postgres the tests
# run themselves (internal/testutil/pgtest: a cluster in a temporary
# directory, on a Unix socket, stopped by its PID). Nothing else is set up:
# no cluster of the package's own is created or started.
#
# Idempotent: with an initdb under /usr/lib/postgresql/*/bin it installs
# nothing (well under a second). It takes apt's lock (hack/lib.sh apt_lock),
# so it can run alongside the other provisioners.
# Progress goes to stderr; stdout ends with exactly this line:
#   PG_BIN_DIR=/usr/lib/postgresql/<major>/bin
set -euo pipefail

T=${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}
mkdir -p "$T/pg"
T=$(cd "$T" && pwd -P)

source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
provision_begin provision-pg "$T/pg"

# bin_dir: the newest major version's bin directory holding an initdb.
bin_dir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[[ -n $d && -x $d/initdb && -x $d/postgres ]] || return 1
	printf '%s\n' "$d"
}

if ! dir=$(bin_dir); then
	[[ $(id -u) == 0 ]] || die "PostgreSQL is not installed and we are not root: apt-get install postgresql"
	log "installing Debian postgresql..."
	start=$SECONDS
	export DEBIAN_FRONTEND=noninteractive
	apt_lock
	# The package would create and start a cluster "main": the tests make
	# their own, so neither (createcluster.d, policy-rc.d).
	mkdir -p /etc/postgresql-common/createcluster.d
	printf 'create_main_cluster = false\n' >/etc/postgresql-common/createcluster.d/driftwatch.conf
	policy_rc_made=0
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && policy_rc_made=1
	fi
	apt-get update -qq >&2 || die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends postgresql >&2 || {
		((policy_rc_made)) && rm -f /usr/sbin/policy-rc.d
		die "apt-get install postgresql failed"
	}
	((policy_rc_made)) && rm -f /usr/sbin/policy-rc.d
	apt_unlock
	dir=$(bin_dir) || die "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"
	log "postgresql installed in $((SECONDS - start))s"
fi
printf 'PG_BIN_DIR=%s\n' "$dir"
