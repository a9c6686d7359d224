package engine

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

// The lock check runs only when the apply may have left its lock: killed
// by a signal (directly, or in the jail as 128+signal), Terraform saying
// it could not release the lock, or no diagnostic at all. A Terraform
// that stopped by itself with its error released the lock on its way out.
func TestNeedsLockCheck(t *testing.T) {
	const providerErr = "\n│ Error: Injected write failure\n│ \n│   with dwtest_revision_file.a,\n"
	cases := []struct {
		name, errText, stderr string
		want                  bool
	}{
		{name: "provider error", errText: "exit status 1", stderr: providerErr},
		{name: "interrupted, stopped by itself", errText: "exit status 1", stderr: "Interrupt received.\n\nError: execution halted\n"},
		{name: "SIGKILL", errText: "signal: killed", stderr: "", want: true},
		{name: "SIGKILL after an error was printed", errText: "signal: killed", stderr: providerErr, want: true},
		{name: "killed in the jail", errText: "exit status 137", stderr: "", want: true},
		{name: "unlock failed", errText: "exit status 1", want: true, stderr: providerErr +
			"\nError: Error releasing the state lock\n\nError message: operation error S3: DeleteObject\n"},
		{name: "crash, no diagnostic", errText: "exit status 11", stderr: "panic: runtime error\n\nTerraform crashed!", want: true},
		{name: "no output at all", errText: "exit status 1", stderr: "", want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, needsLockCheck(tc.errText, tc.stderr))
		})
	}
}

// The check reads Terraform's answer: a plan that took the lock means it
// was free; a lock error names the holder; anything else is unknown, with
// the step's reason.
func TestLockCheckOf(t *testing.T) {
	require.Equal(t, LockCheck{State: LockReleased}, lockCheckOf(nil, ""))

	held := `
Error: Error acquiring the state lock

Error message: operation error S3: PutObject, https response error StatusCode: 412
Lock Info:
  ID:        51c2a0a6-b65f-27c0-f950-d3b7e0514420
  Path:      tfstate-x/locks/kill.tfstate
  Operation: OperationTypeApply
  Who:       nobody@driftwatch-run
  Version:   1.11.4
  Created:   2026-11-25 18:20:59.47094551 +0000 UTC
  Info:      

Terraform acquires a state lock to protect the state from being written
`
	require.Equal(t, LockCheck{State: LockHeld, ID: "51c2a0a6-b65f-27c0-f950-d3b7e0514420", Operation: "OperationTypeApply",
		Who: "nobody@driftwatch-run", Created: "2026-11-25 18:20:59.47094551 +0000 UTC"},
		lockCheckOf(errors.New("exit status 1"), held))

	require.Equal(t, LockCheck{State: LockUnknown, Reason: "Error: Failed to load state"},
		lockCheckOf(&terraform.Error{Phase: "plan", Reason: "Error: Failed to load state"}, "Error: Failed to load state\n"))
}

// A held lock's note names it, says the remediation is not retried, and
// gives the force-unlock command to run after checking; released and
// unknown say so.
func TestLockCheckNote(t *testing.T) {
	held := LockCheck{State: LockHeld, ID: "51c2a0a6", Operation: "OperationTypeApply", Who: "nobody@driftwatch-run", Created: "2026-11-25 18:20:59 +0000 UTC"}
	require.Equal(t, "the state lock is still held (lock ID 51c2a0a6, OperationTypeApply by nobody@driftwatch-run since 2026-11-25 18:20:59 +0000 UTC), "+
		"most likely left by this apply, which could not release it: this remediation is not retried; "+
		"make sure no one is applying to this state, then run `terraform force-unlock 51c2a0a6`", held.note())
	require.Equal(t, "the state lock is still held, most likely left by this apply, which could not release it: this remediation is not retried; "+
		"make sure no one is applying to this state, then run `terraform force-unlock LOCK_ID`",
		LockCheck{State: LockHeld}.note(), "no Lock Info block: the command's placeholder")
	require.Equal(t, "the state lock was released (checked after the apply)", LockCheck{State: LockReleased}.note())
	require.Equal(t, "whether the state lock was released is unknown (the check failed: run timed out after 2m0s): make sure no lock is left before the next apply",
		LockCheck{State: LockUnknown, Reason: "run timed out after 2m0s"}.note())
}
