# hack/lib.sh - what the provision scripts share; sourced, never run.

# provision_begin NAME DIR: messages prefixed NAME (log, die); one
# provisioner at a time per DIR (a flock on DIR/.lock); DIR/tmp for
# temporaries (same filesystem as the results, so a final mv is atomic and
# an interrupted run never leaves a stray file among them), emptied now
# (holding the lock, anything left there is from a dead run) and removed on
# exit; DIR/stamps for stamp_ok and stamp_set.
provision_begin() {
	PROVISION_NAME=$1
	PROVISION_DIR=$2
	exec 9>"$PROVISION_DIR/.lock"
	if ! flock -n 9; then
		log "waiting for lock $PROVISION_DIR/.lock"
		flock 9
	fi
	rm -rf "$PROVISION_DIR/tmp"
	mkdir -p "$PROVISION_DIR/stamps" "$PROVISION_DIR/tmp"
	trap 'rm -rf "$PROVISION_DIR/tmp"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

log() { printf '%s: %s\n' "$PROVISION_NAME" "$*" >&2; }
die() { log "error: $*"; exit 1; }

stamp_ok() { # NAME KEY FILE...: stamp matches and every FILE exists
	local name=$1 key=$2
	shift 2
	[[ -f $PROVISION_DIR/stamps/$name && "$(<"$PROVISION_DIR/stamps/$name")" == "$key" ]] || return 1
	local f
	for f in "$@"; do [[ -e $f ]] || return 1; done
}
stamp_set() { # NAME KEY
	printf '%s\n' "$2" >"$PROVISION_DIR/tmp/stamp-$1" && mv -f "$PROVISION_DIR/tmp/stamp-$1" "$PROVISION_DIR/stamps/$1"
}

# apt_lock / apt_unlock: one apt-get (update or install) on this host at a
# time. `make test` runs the provisioners side by side; apt and dpkg take
# one client at a time and fail, not wait, when another holds them, and the
# installs share /usr/sbin/policy-rc.d. The lock is a file in
# $DRIFTWATCH_TOOLS, which the Makefile's `deps` target takes too.
apt_lock() {
	exec 8>"${DRIFTWATCH_TOOLS:-$HOME/.cache/driftwatch}/.apt.lock"
	flock 8
}
apt_unlock() { exec 8>&-; }
