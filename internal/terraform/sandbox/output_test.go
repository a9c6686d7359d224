package sandbox

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A failed call of the s3 state backend, as real Terraform 1.11 and
// OpenTofu 1.10 print it (recorded against a store behind
// s3test.FaultProxy; the last case hand-written in the boxed, wrapped
// form), is told as what it is: the backend could not be reached or
// failed; which call; after how many attempts; Terraform's summary for
// context. The request's URL is left out.
func TestDiagnosticStateBackend(t *testing.T) {
	exit1 := errors.New("exit status 1")
	cases := map[string]struct{ stderr, want string }{
		"terraform init, connection refused": {
			stderr: "\nInitializing the backend...\n\nError: Failed to get existing workspaces: Unable to list objects in S3 bucket \"tfstate-gb3gx78q\" with prefix \"env:/\": operation error S3: ListObjectsV2, exceeded maximum number of attempts, 5, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Get \"http://127.0.0.1:35601/tfstate-gb3gx78q?list-type=2&max-keys=1000&prefix=env%3A%2F\": dial tcp 127.0.0.1:35601: connect: connection refused\n\n",
			want:   "the state backend could not be reached: S3 ListObjectsV2 failed after 5 attempts: dial tcp 127.0.0.1:35601: connect: connection refused (Failed to get existing workspaces)",
		},
		"terraform init, 500": {
			stderr: "Initializing the backend...\n\nError: Error refreshing state: Unable to access object \"f/ws.tfstate\" in S3 bucket \"tfstate-i6fk1t42\": operation error S3: HeadObject, exceeded maximum number of attempts, 5, https response error StatusCode: 500, RequestID: , HostID: , api error InternalServerError: Internal Server Error\n\n",
			want:   "the state backend failed: S3 HeadObject answered 500 InternalServerError after 5 attempts (Error refreshing state)",
		},
		// OpenTofu's init prints this one as plain text, without "Error:":
		// it used to be told as "exit status 1".
		"tofu init, 500, no diagnostic": {
			stderr: "\nInitializing the backend...\nError refreshing state: operation error S3: HeadObject, exceeded maximum number of attempts, 5, https response error StatusCode: 500, RequestID: , HostID: , api error InternalServerError: Internal Server Error\n",
			want:   "the state backend failed: S3 HeadObject answered 500 InternalServerError after 5 attempts (Error refreshing state)",
		},
		"tofu init, reset, no diagnostic": {
			stderr: "\nInitializing the backend...\nError refreshing state: operation error S3: HeadObject, exceeded maximum number of attempts, 5, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Head \"http://127.0.0.1:45249/tfstate-orba18o5/f/ws.tfstate\": read tcp 127.0.0.1:44104->127.0.0.1:45249: read: connection reset by peer\n",
			want:   "the state backend could not be reached: S3 HeadObject failed after 5 attempts: read tcp 127.0.0.1:44104->127.0.0.1:45249: read: connection reset by peer (Error refreshing state)",
		},
		"other plain error": {
			stderr: "Initializing the backend...\nError refreshing state: the state is in a format this version cannot read\n",
			want:   "Error refreshing state: the state is in a format this version cannot read",
		},
		// The SDK's message in a diagnostic's detail, wrapped and boxed.
		"apply, state write, in the detail (hand-written)": {
			stderr: "╷\n│ Error: Failed to save state\n│ \n│ Error saving state: operation error S3: PutObject, exceeded maximum number\n│ of attempts, 5, https response error StatusCode: 0, RequestID: , HostID: ,\n│ request send failed, Put \"http://127.0.0.1:41000/b/k.tfstate?x-id=PutObject\":\n│ dial tcp 127.0.0.1:41000: connect: connection refused\n╵\n╷\n│ Error: Failed to persist state to backend\n╵\n",
			want:   "the state backend could not be reached: S3 PutObject failed after 5 attempts: dial tcp 127.0.0.1:41000: connect: connection refused (Failed to save state) (and 1 more error)",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := Diagnostic(c.stderr, exit1)
			require.Equal(t, c.want, got)
			require.NotContains(t, got, "http://", "no URL")
		})
	}
}

// Only a call that got no answer or a 5xx is told as a backend failure:
// an answer the backend meant (a held lock's 412, a refused credential's
// 403) keeps Terraform's summary, and so does any other error.
func TestBackendFailureNone(t *testing.T) {
	locked := "\nError: Error acquiring the state lock\n\nError message: operation error S3: PutObject, https response error StatusCode: 412, RequestID: , HostID: , api error PreconditionFailed: At least one of the pre-conditions you specified did not hold\nLock Info:\n  ID:        7d3c6a0e\n"
	require.Equal(t, "Error: Error acquiring the state lock", Diagnostic(locked, errors.New("exit status 1")))
	for _, text := range []string{
		"",
		"Error: Unsupported argument",
		`Error: Invalid value for "bucket": operation error S3 is not a thing`,
		locked,
		"Error: Failed to get existing workspaces: operation error S3: ListObjectsV2, https response error StatusCode: 403, RequestID: 1, HostID: 2, api error InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.",
	} {
		_, ok := BackendFailure(text, text)
		require.False(t, ok, text)
	}
	require.Equal(t, "Error: Unsupported argument (main.tf line 4)",
		Diagnostic("Error: Unsupported argument\n\n  on main.tf line 4:\n", errors.New("exit status 1")), "other diagnostics as before")
}

// A URL's user info and query string are no known value, yet a token:
// every redactor removes them, the zero one too.
func TestRedactorScrubsURLs(t *testing.T) {
	line := `Error: Failed to get state: GET https://u:pw@host/state?token=CANARY giving up: s3cr3t`
	require.Equal(t, `Error: Failed to get state: GET https://[REDACTED]@host/state?[REDACTED] giving up: [REDACTED]`,
		NewRedactor([]string{"s3cr3t"}).Apply(line))
	require.NotContains(t, Redactor(nil).Apply(line), "CANARY")
}
