//go:build unix

package source

import "syscall"

// openFlags are added to every open of a source file: a named pipe opens
// without waiting for a writer (and is then refused), and a symlink in the
// last component is not followed.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW
