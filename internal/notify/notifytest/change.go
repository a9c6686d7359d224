package notifytest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// SampleChange is a proposal of a change to repository (a GitHub
// owner/name, a GitLab project path): the pull or merge request the
// vendors' OpenChange tests open.
func SampleChange(repository string) notify.ChangeRequest {
	return notify.ChangeRequest{
		Repository: repository,
		Head:       "driftwatch/accept/prod-x",
		Base:       "main",
		Title:      "driftwatch: accept drift of prod (2 attributes)",
		Body:       "## Accepted\n\n- `aws_instance.web` `instance_type`\n",
		Labels:     []string{"driftwatch", "accept"},
	}
}

// RequireChangeChecks checks what every vendor's OpenChange does besides
// opening: an answer of status (a 5xx) to req leaves the error
// retryable, and each of bad is refused before any request reaches srv.
func RequireChangeChecks(t testing.TB, n notify.ChangeOpener, srv interface {
	FailNext(Failure)
	Requests() []Request
}, status int, req notify.ChangeRequest, bad ...notify.ChangeRequest) {
	t.Helper()
	srv.FailNext(Failure{Status: status})
	_, err := n.OpenChange(t.Context(), req)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry, "a %d is retried: %v", status, err)
	from := len(srv.Requests())
	for _, b := range bad {
		_, err := n.OpenChange(t.Context(), b)
		require.Error(t, err, "%+v", b)
	}
	require.Len(t, srv.Requests(), from, "refused before any request")
}

// RequireChangeRefused requires OpenChange(req) to fail for good (not
// retryable) with an error containing want and none of secrets.
func RequireChangeRefused(t testing.TB, n notify.ChangeOpener, req notify.ChangeRequest, want string, secrets []string) {
	t.Helper()
	_, err := n.OpenChange(t.Context(), req)
	require.ErrorContains(t, err, want)
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry, "%v", err)
	RequireNoSecrets(t, err, secrets)
}
