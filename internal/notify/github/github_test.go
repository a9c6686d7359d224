package github

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const (
	issuesPath = "/api/v3/repos/driftwatch-test/infra/issues"
	listQuery  = "direction=desc&labels=driftwatch%3Adrift&per_page=100&sort=created&state=all"
	// commentsQuery lists the comments since SampleMessage's time less
	// an hour.
	commentsQuery = "per_page=100&since=2026-11-03T09%3A00%3A00Z"
)

func newTestNotifier(t *testing.T, srv *notifytest.GitHubServer, logger *slog.Logger) *Notifier {
	return notifytest.MustNew(t, New, Config{Name: "gh-infra", TokenFile: srv.TokenFile, Repository: srv.Repository(), APIURL: srv.URL(), Timeout: 5 * time.Second}, srv.HTTPClient(), logger)
}

// delivery is one Notify call's outcome, with what it saved through
// saveState.
type delivery struct {
	state []byte
	saved [][]byte
	err   error
}

func send(t *testing.T, n *Notifier, m notify.Message, state []byte) delivery {
	t.Helper()
	var d delivery
	d.state, d.err = n.Notify(t.Context(), m, state, func(b []byte) error {
		d.saved = append(d.saved, b)
		return nil
	})
	return d
}

// req is an expected request: its body is JSON ("" for none).
type req struct {
	method, path, query, body string
}

// requireRequests checks the server's requests from index from on, and
// that each carried the token and driftwatch's User-Agent.
func requireRequests(t *testing.T, srv *notifytest.GitHubServer, from int, want ...req) {
	t.Helper()
	got := srv.Requests()[from:]
	var gotS, wantS []string
	for _, r := range got {
		gotS = append(gotS, r.Method+" "+r.Path+"?"+r.Query)
	}
	for _, w := range want {
		wantS = append(wantS, w.method+" "+w.path+"?"+w.query)
	}
	require.Equal(t, wantS, gotS)
	for i, w := range want {
		r := got[i]
		require.Equal(t, "Bearer "+srv.Token, r.Header.Get("Authorization"))
		require.Equal(t, "driftwatch", r.Header.Get("User-Agent"))
		if w.body == "" {
			require.Empty(t, r.Body, "%s %s", w.method, w.path)
			continue
		}
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.JSONEq(t, w.body, string(r.Body), "%s %s", w.method, w.path)
	}
}

func createBody(t *testing.T, m notify.Message) string {
	return notifytest.MustJSON(t, map[string]any{"title": buildTitle(m), "body": buildBody(m), "labels": []string{"driftwatch", "driftwatch:drift"}})
}

func editBody(t *testing.T, m notify.Message, state string) string {
	v := map[string]any{"title": buildTitle(m), "body": buildBody(m), "state": state}
	if state == "closed" {
		v["state_reason"] = "completed"
	}
	return notifytest.MustJSON(t, v)
}

func commentBody(t *testing.T, m notify.Message) string {
	c, ok := buildComment(m)
	require.True(t, ok)
	return notifytest.MustJSON(t, map[string]any{"body": c})
}

func TestConformance(t *testing.T) {
	notifytest.ConformanceOf(t, notifytest.NewGitHubServer, newTestNotifier)
}

// One incident key is one issue: open creates it (saving its number at
// once), update, remediation and renotify rewrite its description and
// comment, resolve comments and closes it; the drift coming back reopens
// the same issue, with or without the state.
func TestLifecycle(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
	sample := notifytest.SampleMessage
	issue1 := issuesPath + "/1"
	wantState := `{"repository":"driftwatch-test/infra","issue":1}`

	d := send(t, n, sample(notify.EventOpen), nil)
	require.NoError(t, d.err)
	require.JSONEq(t, wantState, string(d.state))
	require.Len(t, d.saved, 1, "the issue number is saved as soon as the issue exists")
	require.JSONEq(t, wantState, string(d.saved[0]))
	requireRequests(t, srv, 0,
		req{"GET", issuesPath, listQuery, ""},
		req{"POST", issuesPath, "", createBody(t, sample(notify.EventOpen))})

	state := d.state
	for _, ev := range []notify.Event{notify.EventUpdate, notify.EventRemediation, notify.EventRenotify} {
		from := len(srv.Requests())
		d = send(t, n, sample(ev), state)
		require.NoError(t, d.err, ev)
		require.JSONEq(t, wantState, string(d.state))
		require.Empty(t, d.saved, "a known issue needs no early save")
		requireRequests(t, srv, from,
			req{"PATCH", issue1, "", editBody(t, sample(ev), "open")},
			req{"GET", issue1 + "/comments", commentsQuery, ""},
			req{"POST", issue1 + "/comments", "", commentBody(t, sample(ev))})
	}

	from := len(srv.Requests())
	d = send(t, n, sample(notify.EventResolve), state)
	require.NoError(t, d.err)
	require.JSONEq(t, wantState, string(d.state), "kept: the next incident of the key reopens this issue")
	requireRequests(t, srv, from,
		req{"GET", issue1 + "/comments", commentsQuery, ""},
		req{"POST", issue1 + "/comments", "", commentBody(t, sample(notify.EventResolve))},
		req{"PATCH", issue1, "", editBody(t, sample(notify.EventResolve), "closed")})

	is, ok := srv.Issue(1)
	require.True(t, ok)
	require.Len(t, srv.Issues(), 1)
	require.Equal(t, "closed", is.State)
	require.Equal(t, "completed", is.StateReason)
	require.Equal(t, []string{"driftwatch", "driftwatch:drift"}, is.Labels)
	require.Equal(t, buildBody(sample(notify.EventResolve)), is.Body)
	require.Len(t, is.Comments, 4)
	for i, ev := range []notify.Event{notify.EventUpdate, notify.EventRemediation, notify.EventRenotify, notify.EventResolve} {
		c, _ := buildComment(sample(ev))
		require.Equal(t, c, is.Comments[i].Body)
	}

	// The same drift comes back: the issue is reopened in place.
	reopen := sample(notify.EventOpen)
	reopen.ID = "msg-open-0002"
	from = len(srv.Requests())
	d = send(t, n, reopen, state)
	require.NoError(t, d.err)
	requireRequests(t, srv, from, req{"PATCH", issue1, "", editBody(t, reopen, "open")})
	is, _ = srv.Issue(1)
	require.Equal(t, "open", is.State)
	require.Equal(t, "reopened", is.StateReason)
	require.Equal(t, 1, is.Reopened)

	// ... and again after the state was pruned: found by its marker.
	_ = send(t, n, sample(notify.EventResolve), state)
	from = len(srv.Requests())
	d = send(t, n, reopen, nil)
	require.NoError(t, d.err)
	require.JSONEq(t, wantState, string(d.state))
	requireRequests(t, srv, from,
		req{"GET", issuesPath, listQuery, ""},
		req{"PATCH", issue1, "", editBody(t, reopen, "open")})
	require.Len(t, srv.Issues(), 1)
	is, _ = srv.Issue(1)
	require.Equal(t, 2, is.Reopened)
}

// A crash between GitHub accepting a request and the outbox recording the
// delivery replays the message with the previous state: no second issue,
// no second comment.
func TestCrashReplay(t *testing.T) {
	sample := notifytest.SampleMessage
	t.Run("open after the issue was created", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
		require.NoError(t, send(t, n, sample(notify.EventOpen), nil).err)
		from := len(srv.Requests())
		d := send(t, n, sample(notify.EventOpen), nil)
		require.NoError(t, d.err)
		require.JSONEq(t, `{"repository":"driftwatch-test/infra","issue":1}`, string(d.state))
		requireRequests(t, srv, from, req{"GET", issuesPath, listQuery, ""}) // already as the message sets it: no PATCH
		require.Len(t, srv.Issues(), 1)
	})

	t.Run("update with the previous state", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
		open := send(t, n, sample(notify.EventOpen), nil)
		require.NoError(t, send(t, n, sample(notify.EventUpdate), open.state).err)
		from := len(srv.Requests())
		require.NoError(t, send(t, n, sample(notify.EventUpdate), open.state).err)
		requireRequests(t, srv, from,
			req{"PATCH", issuesPath + "/1", "", editBody(t, sample(notify.EventUpdate), "open")},
			req{"GET", issuesPath + "/1/comments", commentsQuery, ""})
		is, _ := srv.Issue(1)
		require.Len(t, is.Comments, 1)
	})

	t.Run("first message an update, replayed without state", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
		d := send(t, n, sample(notify.EventUpdate), nil)
		require.NoError(t, d.err)
		requireRequests(t, srv, 0,
			req{"GET", issuesPath, listQuery, ""},
			req{"POST", issuesPath, "", createBody(t, sample(notify.EventUpdate))},
			req{"POST", issuesPath + "/1/comments", "", commentBody(t, sample(notify.EventUpdate))}) // a new issue has no comment to look for
		from := len(srv.Requests())
		require.NoError(t, send(t, n, sample(notify.EventUpdate), nil).err)
		requireRequests(t, srv, from,
			req{"GET", issuesPath, listQuery, ""},
			req{"GET", issuesPath + "/1/comments", commentsQuery, ""})
		require.Len(t, srv.Issues(), 1)
		is, _ := srv.Issue(1)
		require.Len(t, is.Comments, 1)
	})

	t.Run("resolve", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
		open := send(t, n, sample(notify.EventOpen), nil)
		require.NoError(t, send(t, n, sample(notify.EventResolve), open.state).err)
		for _, st := range [][]byte{open.state, nil} {
			require.NoError(t, send(t, n, sample(notify.EventResolve), st).err)
		}
		is, _ := srv.Issue(1)
		require.Len(t, is.Comments, 1)
		require.Equal(t, "closed", is.State)
		require.Equal(t, 0, is.Reopened)
	})
}

// The state is saved through saveState right after the create, before
// the comment that fails: the retry with that state creates nothing.
func TestStateSavedBeforeFailure(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
	m := notifytest.SampleMessage(notify.EventUpdate)
	var saved []byte
	srv.FailOn("POST", "/comments", notifytest.Failure{Status: 502})
	_, err := n.Notify(t.Context(), m, nil, func(b []byte) error { saved = b; return nil })
	require.Error(t, err)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
	require.JSONEq(t, `{"repository":"driftwatch-test/infra","issue":1}`, string(saved))

	from := len(srv.Requests())
	d := send(t, n, m, saved)
	require.NoError(t, d.err)
	requireRequests(t, srv, from,
		req{"PATCH", issuesPath + "/1", "", editBody(t, m, "open")},
		req{"GET", issuesPath + "/1/comments", commentsQuery, ""},
		req{"POST", issuesPath + "/1/comments", "", commentBody(t, m)})
	require.Len(t, srv.Issues(), 1)

	// A store that cannot save: the error says so, and the replay finds
	// the issue.
	srv = notifytest.NewGitHubServer(t)
	n = newTestNotifier(t, srv, nil)
	_, err = n.Notify(t.Context(), notifytest.SampleMessage(notify.EventOpen), nil, func([]byte) error { return fmt.Errorf("disk full") })
	require.EqualError(t, err, "github gh-infra: issue #1: disk full")
	require.NoError(t, send(t, n, notifytest.SampleMessage(notify.EventOpen), nil).err)
	require.Len(t, srv.Issues(), 1)
}

// The issue is found by its marker among others: other incidents' issues
// with the class label, a pull request and an unlabelled issue with the
// marker, on the list's second page.
func TestFindAmongOthers(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
	m := notifytest.SampleMessage(notify.EventRenotify)
	marker := "<!-- driftwatch:incident=" + notifytest.SampleKey + " -->\n"
	srv.Seed(notifytest.GitHubIssue{Title: "unlabelled copy", Body: marker, Labels: []string{"driftwatch"}})
	want := srv.Seed(notifytest.GitHubIssue{Title: "ours", Body: "\n" + marker + "old text", State: "closed", StateReason: "completed", Labels: []string{"driftwatch:drift"}})
	for i := range 120 {
		srv.Seed(notifytest.GitHubIssue{Title: "other", Body: fmt.Sprintf("<!-- driftwatch:incident=drift-other-%d -->\n", i), Labels: []string{"driftwatch", "driftwatch:drift"}})
	}
	srv.Seed(notifytest.GitHubIssue{Title: "a pull request", Body: marker, PullRequest: true, Labels: []string{"driftwatch:drift"}})
	srv.Seed(notifytest.GitHubIssue{Title: "prefix", Body: "<!-- driftwatch:incident=" + notifytest.SampleKey + "-x -->\n", Labels: []string{"driftwatch:drift"}})

	from := len(srv.Requests())
	d := send(t, n, m, nil)
	require.NoError(t, d.err)
	require.JSONEq(t, fmt.Sprintf(`{"repository":"driftwatch-test/infra","issue":%d}`, want), string(d.state))
	require.Len(t, d.saved, 1)
	ours := fmt.Sprintf("%s/%d", issuesPath, want)
	requireRequests(t, srv, from,
		req{"GET", issuesPath, listQuery, ""},
		req{"GET", issuesPath, "direction=desc&labels=driftwatch%3Adrift&page=2&per_page=100&sort=created&state=all", ""},
		req{"PATCH", ours, "", editBody(t, m, "open")},
		req{"GET", ours + "/comments", commentsQuery, ""},
		req{"POST", ours + "/comments", "", commentBody(t, m)})
	is, _ := srv.Issue(want)
	require.Equal(t, "open", is.State, "a renotify reopens an issue closed by hand")
	require.Equal(t, buildBody(m), is.Body)
}

// An issue that is gone (deleted, here) is looked for again, and a new
// one created; a state of another repository is ignored.
func TestStaleIssue(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
	open := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, open.err)
	srv.Delete(1)

	m := notifytest.SampleMessage(notify.EventUpdate)
	from := len(srv.Requests())
	d := send(t, n, m, open.state)
	require.NoError(t, d.err)
	require.JSONEq(t, `{"repository":"driftwatch-test/infra","issue":2}`, string(d.state))
	requireRequests(t, srv, from,
		req{"PATCH", issuesPath + "/1", "", editBody(t, m, "open")},
		req{"GET", issuesPath, listQuery, ""},
		req{"POST", issuesPath, "", createBody(t, m)},
		req{"POST", issuesPath + "/2/comments", "", commentBody(t, m)})

	// A resolve of a deleted issue creates none.
	srv.Delete(2)
	from = len(srv.Requests())
	d = send(t, n, notifytest.SampleMessage(notify.EventResolve), d.state)
	require.NoError(t, d.err)
	require.Nil(t, d.state, "the gone issue is forgotten")
	requireRequests(t, srv, from,
		req{"GET", issuesPath + "/2/comments", commentsQuery, ""},
		req{"GET", issuesPath, listQuery, ""})
	require.Len(t, srv.Issues(), 2)

	from = len(srv.Requests())
	d = send(t, n, notifytest.SampleMessage(notify.EventOpen), []byte(`{"repository":"someone/else","issue":1}`))
	require.NoError(t, d.err)
	requireRequests(t, srv, from,
		req{"GET", issuesPath, listQuery, ""},
		req{"POST", issuesPath, "", createBody(t, notifytest.SampleMessage(notify.EventOpen))})
}

func TestRateLimits(t *testing.T) {
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		limit notifytest.GitHubRateLimit
		want  time.Duration
		err   string
	}{
		{"primary: until the reset", notifytest.GitHubRateLimit{Reset: now.Add(90 * time.Second)}, 90 * time.Second,
			"status 403: API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID."},
		{"primary 429", notifytest.GitHubRateLimit{Status: 429, Reset: now.Add(time.Minute)}, time.Minute,
			"status 429: API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID."},
		{"secondary with Retry-After", notifytest.GitHubRateLimit{Secondary: true, RetryAfter: "30"}, 30 * time.Second,
			"status 403: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID."},
		{"secondary naming no time: a minute", notifytest.GitHubRateLimit{Secondary: true}, time.Minute,
			"status 403: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID."},
		{"secondary 429", notifytest.GitHubRateLimit{Status: 429, Secondary: true, RetryAfter: "5"}, 5 * time.Second,
			"status 429: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
			n.now = func() time.Time { return now }
			srv.LimitNext(tc.limit)
			d := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
			require.EqualError(t, d.err, "github gh-infra: list issues: "+tc.err)
			retry, after := notify.IsRetryable(d.err)
			require.True(t, retry)
			require.Equal(t, tc.want, after)
			require.Empty(t, srv.Issues())
			// The next attempt goes to GitHub (no client-side hold).
			require.NoError(t, send(t, n, notifytest.SampleMessage(notify.EventOpen), nil).err)
			require.Len(t, srv.Issues(), 1)
		})
	}
}

// Permanent failures carry GitHub's message; retryable ones are retried
// by the outbox (one attempt per request).
func TestStatusClasses(t *testing.T) {
	for _, tc := range []struct {
		status    int
		body      string
		retryable bool
		err       string
	}{
		{500, "", true, "status 500: Internal Server Error"},
		{502, `{"message":"Server Error"}`, true, "status 502: Server Error"},
		{503, "", true, "status 503: Service Unavailable"},
		{408, "", true, "status 408: Request Timeout"},
		{403, `{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/issues/issues#list-repository-issues","status":"403"}`, false,
			"status 403: Resource not accessible by personal access token"},
		{422, `{"message":"Validation Failed","errors":[{"resource":"Issue","code":"invalid","field":"state"},{"resource":"Issue","code":"custom","field":"body","message":"body is too long"}],"documentation_url":"https://docs.github.com/rest","status":"422"}`, false,
			"status 422: Validation Failed: invalid state (Issue); body is too long"},
		{400, `not json`, false, "status 400: Bad Request"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
			srv.FailNext(notifytest.Failure{Status: tc.status, Body: tc.body})
			d := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
			notifytest.RequireAPIError(t, d.err, "github gh-infra: list issues: "+tc.err, tc.status, tc.retryable)
			require.Len(t, srv.Requests(), 1)
		})
	}

	t.Run("wrong token", func(t *testing.T) {
		srv := notifytest.NewGitHubServer(t)
		bad := notifytest.NewFiles(t).Write("token", "ghp_wrong0123456789")
		n, err := New(Config{Name: "gh", TokenFile: bad, Repository: srv.Repository(), APIURL: srv.URL()}, srv.HTTPClient(), slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		d := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.EqualError(t, d.err, "github gh: list issues: status 401: Bad credentials (check the token in token_file)")
		retry, _ := notify.IsRetryable(d.err)
		require.False(t, retry)
		notifytest.RequireNoSecrets(t, d.err, []string{"ghp_wrong0123456789"})
	})

	t.Run("unknown repository", func(t *testing.T) {
		srv := notifytest.NewGitHubServer(t)
		n, err := New(Config{Name: "gh", TokenFile: srv.TokenFile, Repository: "driftwatch-test/infar", APIURL: srv.URL()}, srv.HTTPClient(), slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		d := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.EqualError(t, d.err, "github gh: list issues: status 404: Not Found (the repository does not exist, or the token cannot see it)")
		retry, _ := notify.IsRetryable(d.err)
		require.False(t, retry)
	})

	t.Run("issues disabled", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
		open := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		srv.DisableIssues(true)
		d := send(t, n, notifytest.SampleMessage(notify.EventUpdate), open.state)
		require.EqualError(t, d.err, "github gh-infra: list issues: status 410: Issues are disabled for this repo")
		retry, _ := notify.IsRetryable(d.err)
		require.False(t, retry)
	})

	t.Run("a failed comment after the update is retried, and posted once", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewGitHubServer, newTestNotifier)
		open := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		srv.FailOn("POST", "/comments", notifytest.Failure{Status: 503, RetryAfter: "12"})
		d := send(t, n, notifytest.SampleMessage(notify.EventUpdate), open.state)
		require.EqualError(t, d.err, "github gh-infra: comment on issue #1: status 503: Service Unavailable")
		retry, after := notify.IsRetryable(d.err)
		require.True(t, retry)
		require.Equal(t, 12*time.Second, after)
		require.NoError(t, send(t, n, notifytest.SampleMessage(notify.EventUpdate), open.state).err)
		is, _ := srv.Issue(1)
		require.Len(t, is.Comments, 1)
	})
}

// Redirects are not followed: the token goes with every request.
func TestRedirectNotFollowed(t *testing.T) {
	tokenFile := notifytest.SecretFile(t, "token", "ghp_"+strings.Repeat("a", 36))
	notifytest.RequireNoRedirect(t, http.StatusMovedPermanently, func(redirect string) (notify.Notifier, error) {
		return New(Config{Name: "gh", TokenFile: tokenFile, Repository: "acme/infra", APIURL: redirect + "/api/v3/"}, nil, slog.New(slog.DiscardHandler))
	}, "github gh: list issues: status 301: Moved Permanently (redirects are not followed: if the repository was renamed or moved, set repository to its new name)")
}

func TestTimeoutIsRetryable(t *testing.T) {
	srv := notifytest.NewGitHubServer(t)
	n := notifytest.MustNew(t, New, Config{Name: "gh", TokenFile: srv.TokenFile, Repository: srv.Repository(), APIURL: srv.URL(), Timeout: 100 * time.Millisecond}, srv.HTTPClient(), nil)
	notifytest.RequireTimeout(t, srv, n, "github gh: list issues: timeout after 100ms")
}

func TestPermanentErrors(t *testing.T) {
	notifytest.RequireUnknownEventOf(t, notifytest.NewGitHubServer, newTestNotifier, []byte("{}"), `github gh-infra: unknown event "snooze"`)
}

// The token is in the Authorization header and nowhere else: not in an
// error, a state or a log line, whatever the server echoes.
func TestCanaryAbsentEverywhere(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewGitHubServer, newTestNotifier)
	secrets := srv.Secrets()
	echo := fmt.Sprintf(`{"message":"bad %s","errors":[{"resource":"Issue","code":"custom","message":"token %s"}],"documentation_url":"https://docs.github.com/%s"}`,
		srv.Token, srv.Token, srv.Token)
	var errs []error
	var states [][]byte
	run := func(ev notify.Event, st []byte) []byte {
		d := send(t, n, notifytest.SampleMessage(ev), st)
		errs = append(errs, d.err)
		states = append(states, d.state)
		states = append(states, d.saved...)
		return d.state
	}
	st := run(notify.EventOpen, nil)
	for _, status := range []int{400, 401, 403, 404, 410, 422, 429, 500} {
		srv.FailNext(notifytest.Failure{Status: status, Body: echo})
		run(notify.EventUpdate, st)
	}
	srv.Down()
	run(notify.EventRenotify, st)
	srv.Up()
	run(notify.EventResolve, st)

	// 404 and 410 on the issue make the notifier look for it again, and
	// it is there: those two deliveries succeed.
	require.Equal(t, 7, notifytest.RequireNoSecretsInResults(t, secrets, errs, states))
	for _, err := range errs {
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			require.Contains(t, err.Error(), "[REDACTED]", "GitHub's message is shown, redacted")
		}
	}
	require.NotEmpty(t, logs())
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
	for _, r := range srv.Requests() {
		require.Equal(t, "Bearer "+srv.Token, r.Header.Get("Authorization"))
		notifytest.RequireNoSecretsIn(t, r.Path+"?"+r.Query+string(r.Body), secrets)
		notifytest.RequireNoSecretsInHeader(t, r.Header, secrets, "Authorization")
	}
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	write := files.Write
	logger := slog.New(slog.DiscardHandler)
	token := "github_pat_11AAAAAAA0123456789abcdef"
	good := write("good", token+"\n")

	_, err := New(Config{Name: "gh", TokenFile: good, Repository: "acme/infra"}, nil, nil)
	require.EqualError(t, err, "github: logger is required")

	_, err = New(Config{Name: "gh"}, nil, logger)
	require.EqualError(t, err, "github \"gh\": token_file: required\nrepository: required (owner/name)")

	_, err = New(Config{Name: "gh", TokenFile: good, Repository: "acme"}, nil, logger)
	require.EqualError(t, err, `github "gh": repository: "acme": want owner/name, e.g. acme/infrastructure`)

	_, err = New(Config{Name: "gh", TokenFile: good, Repository: "acme/infra", APIURL: "http://ghe.corp.example/api/v3/"}, nil, logger)
	require.EqualError(t, err, `github "gh": api_url: must be https: the token travels in a header (http only to a loopback address)`)

	_, err = New(Config{Name: "gh", TokenFile: good, Repository: "acme/infra", Labels: []string{"a,b", ""}}, nil, logger)
	require.EqualError(t, err, "github \"gh\": labels[0]: \"a,b\": no commas or line breaks\nlabels[1]: empty label")

	_, err = New(Config{Name: "gh", TokenFile: files.Path("missing"), Repository: "acme/infra"}, nil, logger)
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = New(Config{Name: "gh", TokenFile: write("empty", " \n"), Repository: "acme/infra"}, nil, logger)
	require.EqualError(t, err, `github "gh": token_file "`+files.Path("empty")+`" is empty`)

	for name, content := range map[string]string{"two": token + "\n" + token, "spaced": token[:10] + " " + token[11:]} {
		_, err = New(Config{Name: "gh", TokenFile: write(name, content), Repository: "acme/infra"}, nil, logger)
		require.EqualError(t, err, `github "gh": token_file "`+files.Path(name)+`": want one token on one line (printable ASCII, no spaces)`)
		notifytest.RequireNoSecrets(t, err, []string{token, token[:10]})
	}

	n, err := New(Config{Name: "gh", TokenFile: good, Repository: "acme/infra"}, nil, logger)
	require.NoError(t, err)
	require.Equal(t, "gh", n.Name())
	require.Equal(t, token, n.token)
	require.Equal(t, "https://api.github.com/", n.client.BaseURL.String())
	require.Equal(t, []string{"driftwatch"}, n.labels)

	n, err = New(Config{Name: "gh", TokenFile: good, Repository: "acme/infra", APIURL: "https://ghe.corp.example/api/v3"}, nil, logger)
	require.NoError(t, err)
	require.Equal(t, "https://ghe.corp.example/api/v3/", n.client.BaseURL.String())

	n, err = New(Config{Name: "gh", TokenFile: good, Repository: "acme/infra", APIURL: "https://ghe.corp.example"}, nil, logger)
	require.NoError(t, err)
	require.Equal(t, "https://ghe.corp.example/api/v3/", n.client.BaseURL.String(), "GitHub Enterprise Server's API path is added")
}

// GitHub drops a new issue's labels when the token may not set them: the
// notifier says so, since the issue cannot be found again without them.
func TestLabelsDropped(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewGitHubServer, newTestNotifier)
	srv.DropLabels(true)
	require.NoError(t, send(t, n, notifytest.SampleMessage(notify.EventOpen), nil).err)
	require.Contains(t, logs(), `level=ERROR msg="GitHub did not set the issue's labels`)
	require.Contains(t, logs(), "label=driftwatch:drift")
	srv.DropLabels(false)
	require.NoError(t, send(t, n, notifytest.SampleMessage(notify.EventOpen), nil).err)
	require.Len(t, srv.Issues(), 2, "what the log warns of")
}
