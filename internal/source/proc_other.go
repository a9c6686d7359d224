//go:build !unix

package source

import (
	"context"
	"errors"
	"os/exec"
)

// Git checkouts need flock and process groups; driftwatch ships for Linux.
func configureProcess(*exec.Cmd) {}

func killProcessGroup(int) {}

func lockFile(context.Context, string) (func(), error) {
	return nil, errors.New("git sources are only supported on unix systems")
}
