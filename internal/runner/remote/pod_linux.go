package remote

import (
	"log/slog"
	"net"

	"golang.org/x/sys/unix"
)

// dumpable reports the process's dumpable flag (tests).
func dumpable() (bool, error) {
	r, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return r != 0, err
}

// closeOnExec sets FD_CLOEXEC on conn's descriptor.
func closeOnExec(conn *net.UnixConn) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		_, ferr = unix.FcntlInt(fd, unix.F_SETFD, unix.FD_CLOEXEC)
	}); err != nil {
		return err
	}
	return ferr
}

// peerAttrs are the log attributes of the peer process of conn (pid, uid,
// gid from SO_PEERCRED), for the reporter's record of who connected.
func peerAttrs(conn *net.UnixConn) []any {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil
	}
	var cred *unix.Ucred
	_ = rc.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return nil
	}
	return []any{slog.Int("peer_pid", int(cred.Pid)), slog.Int("peer_uid", int(cred.Uid)), slog.Int("peer_gid", int(cred.Gid))}
}
