//go:build !linux

package remote

import "net"

// Run pods are Linux; elsewhere these are no-ops.

func dumpable() (bool, error) { return true, nil }

func closeOnExec(*net.UnixConn) error { return nil }

func peerAttrs(*net.UnixConn) []any { return nil }
