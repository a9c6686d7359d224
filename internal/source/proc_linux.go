package source

import "syscall"

// sysProcAttr also kills git if driftwatch dies, so no orphan keeps the
// cache busy.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
