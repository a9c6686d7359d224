package gitlab

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const (
	// projectPath is notifytest.GitLabProjectPath as it goes in a URL.
	projectPath = "/api/v4/projects/platform%2Finfra%2Fdrift-alerts"
	issuesPath  = projectPath + "/issues"
	findQuery   = "in=description&labels=driftwatch%3A%3Adrift&order_by=created_at&page=1&per_page=20&search=" + notifytest.SampleKey + "&sort=desc&state=all"
	notesQuery  = "order_by=created_at&per_page=100&sort=desc"
)

func newTestNotifier(t *testing.T, srv *notifytest.GitLabServer, logger *slog.Logger) *Notifier {
	t.Helper()
	return newNotifierFor(t, srv, notifytest.GitLabProjectPath, logger)
}

func newNotifierFor(t *testing.T, srv *notifytest.GitLabServer, project string, logger *slog.Logger) *Notifier {
	return notifytest.MustNew(t, New, Config{Name: "gl-infra", TokenFile: srv.TokenFile, Project: project, APIURL: srv.URL(), Timeout: 5 * time.Second}, srv.HTTPClient(), logger)
}

// saver records what saveState was given.
type saver struct{ saved [][]byte }

func (s *saver) save(b []byte) error {
	s.saved = append(s.saved, b)
	return nil
}

func send(t *testing.T, n *Notifier, m notify.Message, st []byte) ([]byte, error) {
	t.Helper()
	return n.Notify(t.Context(), m, st, func([]byte) error { return nil })
}

// call is a request as the tests expect it: method, escaped path, raw
// query, and for a POST or PUT the JSON body.
type call struct {
	method, path, query string
	body                map[string]any
}

func requireCalls(t *testing.T, want []call, got []notifytest.Request) {
	t.Helper()
	require.Len(t, got, len(want), "requests: %s", describe(got))
	for i, w := range want {
		r := got[i]
		require.Equal(t, w.method+" "+w.path+"?"+w.query, r.Method+" "+r.Path+"?"+r.Query, "request %d", i)
		if w.body == nil {
			require.Empty(t, r.Body, "request %d", i)
			continue
		}
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &body))
		require.Equal(t, w.body, body, "request %d: %s %s", i, r.Method, r.Path)
	}
}

func describe(rs []notifytest.Request) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Method+" "+r.Path)
	}
	return strings.Join(s, ", ")
}

func find() call { return call{method: "GET", path: issuesPath, query: findQuery} }

func create(m notify.Message) call {
	return call{method: "POST", path: issuesPath, body: map[string]any{
		"title": issueTitle(m.Incident), "description": buildDescription(m), "labels": "driftwatch,driftwatch::drift",
	}}
}

func update(iid string, m notify.Message, stateEvent string) call {
	b := map[string]any{"title": issueTitle(m.Incident), "description": buildDescription(m), "add_labels": "driftwatch,driftwatch::drift"}
	if stateEvent != "" {
		b["state_event"] = stateEvent
	}
	return call{method: "PUT", path: issuesPath + "/" + iid, body: b}
}

func listNotes(iid string) call {
	return call{method: "GET", path: issuesPath + "/" + iid + "/notes", query: notesQuery}
}

func comment(iid string, m notify.Message, reopened bool) call {
	return call{method: "POST", path: issuesPath + "/" + iid + "/notes", body: map[string]any{"body": buildNote(m, reopened)}}
}

func TestConformance(t *testing.T) {
	notifytest.ConformanceOf(t, notifytest.NewGitLabServer, newTestNotifier)
}

// One rolling issue per incident key: created on open (and saved at
// once), rewritten in place with a comment per update, remediation and
// renotify, closed on resolve, reopened with a comment when the drift
// comes back. The requests on the wire are exactly these.
func TestLifecycle(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	msg := notifytest.SampleMessage
	var st []byte
	var saves saver
	for _, ev := range []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventRemediation, notify.EventRenotify, notify.EventResolve} {
		var err error
		st, err = n.Notify(t.Context(), msg(ev), st, saves.save)
		require.NoError(t, err, ev)
		want := `{"project":"platform/infra/drift-alerts","iid":1}`
		if ev == notify.EventResolve {
			want = `{"project":"platform/infra/drift-alerts","iid":1,"closed":true}`
		}
		require.JSONEq(t, want, string(st), ev)
	}
	require.Equal(t, [][]byte{[]byte(`{"project":"platform/infra/drift-alerts","iid":1}`)}, saves.saved, "saved once, right after the create")

	requireCalls(t, []call{
		find(), create(msg(notify.EventOpen)),
		update("1", msg(notify.EventUpdate), ""), listNotes("1"), comment("1", msg(notify.EventUpdate), false),
		update("1", msg(notify.EventRemediation), ""), listNotes("1"), comment("1", msg(notify.EventRemediation), false),
		update("1", msg(notify.EventRenotify), ""), listNotes("1"), comment("1", msg(notify.EventRenotify), false),
		update("1", msg(notify.EventResolve), "close"), listNotes("1"), comment("1", msg(notify.EventResolve), false),
	}, srv.Requests())
	for _, r := range srv.Requests() {
		require.Equal(t, srv.Token, r.Header.Get("PRIVATE-TOKEN"))
		require.Equal(t, "driftwatch-gitlab/1", r.Header.Get("User-Agent"))
	}

	issues := srv.Issues()
	require.Len(t, issues, 1)
	is := issues[0]
	require.Equal(t, "closed", is.State)
	require.Equal(t, "Terraform drift in prod/network", is.Title)
	require.Equal(t, []string{"driftwatch", "driftwatch::drift"}, is.Labels)
	require.Equal(t, buildDescription(msg(notify.EventResolve)), is.Description)
	require.Len(t, is.Comments(), 4)

	// The same drift comes back: the same issue reopens, with a comment.
	before := len(srv.Requests())
	st, err := n.Notify(t.Context(), msg(notify.EventOpen), st, saves.save)
	require.NoError(t, err)
	require.JSONEq(t, `{"project":"platform/infra/drift-alerts","iid":1}`, string(st))
	requireCalls(t, []call{update("1", msg(notify.EventOpen), "reopen"), listNotes("1"), comment("1", msg(notify.EventOpen), true)},
		srv.Requests()[before:])
	is, _ = srv.Issue(1)
	require.Equal(t, "opened", is.State)
	require.Len(t, srv.Issues(), 1)
	require.Len(t, is.Comments(), 5)
	require.Len(t, saves.saved, 1)
}

// A crash between GitLab creating the issue and the outbox recording it:
// the replay (same message, the previous state: none) finds the issue by
// its marker and rewrites it; there is no second issue and no comment.
func TestCrashAfterCreate(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	open := notifytest.SampleMessage(notify.EventOpen)

	// The answer to the create is lost: GitLab made the issue, the
	// notifier saw a dropped connection.
	srv.LoseNext("POST", "/issues")
	_, err := send(t, n, open, nil)
	require.Error(t, err)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
	require.Len(t, srv.Issues(), 1)

	// And a crash right after the create: what saveState saved is lost.
	var saves saver
	st, err := n.Notify(t.Context(), open, nil, saves.save)
	require.NoError(t, err)
	st2, err := n.Notify(t.Context(), open, nil, saves.save)
	require.NoError(t, err)
	require.Equal(t, st, st2)
	require.Len(t, saves.saved, 2, "each lookup saves what it found before going on")

	requireCalls(t, []call{
		find(), create(open),
		find(), update("1", open, ""),
		find(), update("1", open, ""),
	}, srv.Requests())
	require.Len(t, srv.Issues(), 1)
	is, _ := srv.Issue(1)
	require.Empty(t, is.Comments())
}

// A failed saveState after the create fails the delivery (retryable);
// the retry finds the issue instead of creating another.
func TestSaveStateFailure(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	open := notifytest.SampleMessage(notify.EventOpen)
	_, err := n.Notify(t.Context(), open, nil, func([]byte) error { return errors.New("database is locked") })
	require.EqualError(t, err, "gitlab gl-infra: save state: database is locked")
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
	_, err = send(t, n, open, nil)
	require.NoError(t, err)
	require.Len(t, srv.Issues(), 1)
}

// A replay of a message whose comment was posted (the answer lost, or a
// crash before the outbox recorded it) posts no second comment: the
// notifier finds its marker among the issue's recent notes.
func TestReplayPostsNoSecondComment(t *testing.T) {
	for _, ev := range []notify.Event{notify.EventUpdate, notify.EventRemediation, notify.EventRenotify, notify.EventResolve} {
		t.Run(string(ev), func(t *testing.T) {
			srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
			st, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
			require.NoError(t, err)
			srv.AddComment(1, "Looking into it.")

			m := notifytest.SampleMessage(ev)
			srv.LoseNext("POST", "/notes")
			_, err = send(t, n, m, st)
			require.Error(t, err, "the comment's answer was lost")
			before := len(srv.Requests())
			for range 2 { // the outbox's retry, then a crash replay
				_, err = send(t, n, m, st)
				require.NoError(t, err)
			}
			stateEvent := ""
			if ev == notify.EventResolve {
				stateEvent = "close"
			}
			requireCalls(t, []call{update("1", m, stateEvent), listNotes("1"), update("1", m, stateEvent), listNotes("1")}, srv.Requests()[before:])
			is, _ := srv.Issue(1)
			require.Len(t, is.Comments(), 2, "the person's and one of driftwatch's")
			require.Equal(t, buildNote(m, false), is.Comments()[1].Body)
		})
	}

	t.Run("reopen", func(t *testing.T) {
		srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
		st, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.NoError(t, err)
		closed, err := send(t, n, notifytest.SampleMessage(notify.EventResolve), st)
		require.NoError(t, err)
		open := notifytest.SampleMessage(notify.EventOpen)
		open.ID = "msg-open-0002"
		for range 2 {
			_, err = send(t, n, open, closed)
			require.NoError(t, err)
		}
		is, _ := srv.Issue(1)
		require.Equal(t, "opened", is.State)
		require.Len(t, is.Comments(), 2, "the resolve's and one reopen comment")
		require.Equal(t, 1, strings.Count(strings.Join(systemNotes(is), "\n"), "reopened"))
	})
}

func systemNotes(is notifytest.GitLabIssue) []string {
	var out []string
	for _, n := range is.Notes {
		if n.System {
			out = append(out, n.Body)
		}
	}
	return out
}

// Without state (first delivery, or the state was pruned after an old
// resolve), the issue is found by its marker: another incident's issue
// with a similar key, an issue that only mentions the key and a
// person's issue are left alone, and the closed issue of the key is
// reopened.
func TestFindsTheIssueByItsMarker(t *testing.T) {
	srv := notifytest.NewGitLabServer(t)
	marker := incidentMarker(notifytest.SampleKey)
	labels := []string{"driftwatch", "driftwatch::drift"}
	ours := srv.AddIssue("Terraform drift in prod/network", marker+"\nold description", labels, true)
	srv.AddIssue("Terraform drift in prod/network-2", incidentMarker(notifytest.SampleKey+"-2")+"\n", labels, false)
	srv.AddIssue("Why does "+notifytest.SampleKey+" keep drifting?", "See "+notifytest.SampleKey+" in the pager.", labels, false)
	srv.AddIssue("Unrelated", "Nothing to see", nil, false)

	n := newTestNotifier(t, srv, nil)
	open := notifytest.SampleMessage(notify.EventOpen)
	st, err := send(t, n, open, nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"project":"platform/infra/drift-alerts","iid":1}`, string(st))
	requireCalls(t, []call{find(), update("1", open, "reopen"), listNotes("1"), comment("1", open, true)}, srv.Requests())
	is, _ := srv.Issue(ours)
	require.Equal(t, "opened", is.State)
	require.Len(t, srv.Issues(), 4)
}

// The lookup follows GitLab's pagination: the issue may be on a later
// page when other issues mention the key.
func TestFindPaginates(t *testing.T) {
	srv := notifytest.NewGitLabServer(t)
	labels := []string{"driftwatch", "driftwatch::drift"}
	srv.AddIssue("Terraform drift in prod/network", incidentMarker(notifytest.SampleKey)+"\n", labels, false)
	for range 25 { // newer: listed first
		srv.AddIssue("Question", "about "+notifytest.SampleKey, labels, false)
	}
	n := newTestNotifier(t, srv, nil)
	upd := notifytest.SampleMessage(notify.EventUpdate)
	_, err := send(t, n, upd, nil)
	require.NoError(t, err)
	requireCalls(t, []call{
		find(), {method: "GET", path: issuesPath, query: strings.Replace(findQuery, "page=1", "page=2", 1)},
		update("1", upd, ""), listNotes("1"), comment("1", upd, false),
	}, srv.Requests())
	require.Len(t, srv.Issues(), 26)
}

// An issue closed by hand stays closed while the incident is open (it is
// still rewritten and commented on); the incident's next open reopens it.
func TestClosedByHand(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	st, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	srv.CloseIssue(1)
	before := len(srv.Requests())
	upd := notifytest.SampleMessage(notify.EventUpdate)
	st, err = send(t, n, upd, st)
	require.NoError(t, err)
	requireCalls(t, []call{update("1", upd, ""), listNotes("1"), comment("1", upd, false)}, srv.Requests()[before:])
	is, _ := srv.Issue(1)
	require.Equal(t, "closed", is.State)

	st, err = send(t, n, notifytest.SampleMessage(notify.EventResolve), st)
	require.NoError(t, err)
	open := notifytest.SampleMessage(notify.EventOpen)
	open.ID = "msg-open-0002"
	_, err = send(t, n, open, st)
	require.NoError(t, err)
	is, _ = srv.Issue(1)
	require.Equal(t, "opened", is.State)
}

// A resolve with no issue to close (the open never reached GitLab) does
// nothing and forgets the incident.
func TestResolveWithoutIssue(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	st, err := n.Notify(t.Context(), notifytest.SampleMessage(notify.EventResolve), nil, func([]byte) error {
		t.Fatal("nothing to save")
		return nil
	})
	require.NoError(t, err)
	require.Nil(t, st)
	requireCalls(t, []call{find()}, srv.Requests())
	require.Empty(t, srv.Issues())
}

// An issue deleted in GitLab: the next message opens a new one.
func TestStoredIssueGone(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	st, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	srv.DeleteIssue(1)
	before := len(srv.Requests())
	upd := notifytest.SampleMessage(notify.EventUpdate)
	st, err = send(t, n, upd, st)
	require.NoError(t, err)
	requireCalls(t, []call{update("1", upd, ""), find(), create(upd), comment("1", upd, false)}, srv.Requests()[before:])
	require.JSONEq(t, `{"project":"platform/infra/drift-alerts","iid":1}`, string(st))
	require.Len(t, srv.Issues(), 1)
}

// State from another project (the config changed) is not used: the
// issue is looked up in the configured project.
func TestStateOfAnotherProject(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	open := notifytest.SampleMessage(notify.EventOpen)
	_, err := send(t, n, open, []byte(`{"project":"platform/old","iid":9}`))
	require.NoError(t, err)
	_, err = send(t, n, notifytest.SampleMessage(notify.EventUpdate), []byte(`not json`))
	require.NoError(t, err)
	require.Equal(t, []string{"GET", "POST", "GET", "PUT", "GET", "POST"}, methods(srv.Requests()))
	require.Len(t, srv.Issues(), 1)
}

func methods(rs []notifytest.Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Method)
	}
	return out
}

// A numeric project ID goes in the path as is.
func TestNumericProjectID(t *testing.T) {
	srv := notifytest.NewGitLabServer(t)
	n := newNotifierFor(t, srv, "4242", nil)
	_, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	rs := srv.Requests()
	require.Len(t, rs, 2)
	require.Equal(t, "/api/v4/projects/4242/issues", rs[0].Path)
	require.Equal(t, "/api/v4/projects/4242/issues", rs[1].Path)
}

// 404 on the project is permanent and says what to check.
func TestProjectNotFound(t *testing.T) {
	srv := notifytest.NewGitLabServer(t)
	n := newNotifierFor(t, srv, "platform/infra/other", nil)
	_, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	notifytest.RequireAPIError(t, err, "gitlab gl-infra: find the issue of "+notifytest.SampleKey+": status 404 (does the project exist, and can the token see it?)", 404, false)
}

// GitLab's message for a refused request is on the error (what the
// notifier's status shows), without the token.
func TestRefusedRequestShowsGitLabsMessage(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"message":{"title":["is too long (maximum is 255 characters)"],"labels":["is invalid"]}}`,
			"status 400: labels is invalid; title is too long (maximum is 255 characters)"},
		{400, `{"error":"title is missing"}`, "status 400: title is missing"},
		{422, `{"message":["Issue could not be saved","Spam detected"]}`, "status 422: Issue could not be saved; Spam detected"},
		{401, `{"message":"401 Unauthorized"}`, "status 401: 401 Unauthorized (is the token valid and unexpired?)"},
		{401, `{"error":"invalid_token","error_description":"Token was revoked. You have to re-authorize from the user."}`,
			"status 401: invalid_token: Token was revoked. You have to re-authorize from the user. (is the token valid and unexpired?)"},
		{403, `{"message":"403 Forbidden"}`, "status 403: 403 Forbidden (does the token have the api scope and at least the Reporter role?)"},
		{409, `not json`, "status 409"},
	} {
		srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
		srv.FailNext(notifytest.Failure{Status: tc.status, Body: tc.body})
		_, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		require.EqualError(t, err, "gitlab gl-infra: find the issue of "+notifytest.SampleKey+": "+tc.want)
		retry, _ := notify.IsRetryable(err)
		require.False(t, retry, tc.want)
	}
}

// The server's own validation, end to end: a refused create is
// permanent and nothing is saved.
func TestCreateRefused(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	m := notifytest.SampleMessage(notify.EventOpen)
	srv.FailNext(notifytest.Failure{Status: 200, Body: `[]`}) // the lookup
	srv.FailNext(notifytest.Failure{Status: 403, Body: `{"message":"403 Forbidden"}`})
	_, err := n.Notify(t.Context(), m, nil, func([]byte) error { t.Fatal("nothing to save"); return nil })
	require.EqualError(t, err, "gitlab gl-infra: create the issue of "+notifytest.SampleKey+": status 403: 403 Forbidden (does the token have the api scope and at least the Reporter role?)")
	require.Empty(t, srv.Issues())
}

// One attempt per request: the client library does not retry, the outbox
// does.
func TestStatusClasses(t *testing.T) {
	notifytest.RequireStatusClasses(t, notifytest.NewGitLabServer, "", []int{500, 502, 503, 504, 408, 429}, []int{400, 401, 403, 404, 422},
		func(t *testing.T, srv *notifytest.GitLabServer) error {
			_, err := send(t, newTestNotifier(t, srv, nil), notifytest.SampleMessage(notify.EventOpen), nil)
			return err
		})
}

func TestRateLimited(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	n.now = func() time.Time { return now }
	body := `{"message":"Retry later"}`
	for _, tc := range []struct {
		retryAfter string
		reset      time.Time
		want       time.Duration
	}{
		{retryAfter: "30", want: 30 * time.Second},
		{retryAfter: now.Add(2 * time.Minute).Format(http.TimeFormat), want: 2 * time.Minute},
		{reset: now.Add(90 * time.Second), want: 90 * time.Second}, // GitLab's RateLimit-Reset
		{retryAfter: "20", reset: now.Add(90 * time.Second), want: 20 * time.Second},
		{want: 0}, // the outbox's backoff
	} {
		srv.SetRateLimitReset(tc.reset)
		srv.FailNext(notifytest.Failure{Status: 429, RetryAfter: tc.retryAfter, Body: body})
		_, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
		retry, after := notify.IsRetryable(err)
		require.True(t, retry)
		require.Equal(t, tc.want, after, "%q %s", tc.retryAfter, tc.reset)
		require.EqualError(t, err, "gitlab gl-infra: find the issue of "+notifytest.SampleKey+": status 429: Retry later")
	}
	srv.SetRateLimitReset(time.Time{})
	require.Empty(t, srv.Issues())
	_, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.Len(t, srv.Issues(), 1)
}

func TestTimeoutIsRetryable(t *testing.T) {
	srv := notifytest.NewGitLabServer(t)
	n := notifytest.MustNew(t, New, Config{Name: "gl", TokenFile: srv.TokenFile, Project: notifytest.GitLabProjectPath, APIURL: srv.URL(), Timeout: 100 * time.Millisecond}, srv.HTTPClient(), nil)
	notifytest.RequireTimeout(t, srv, n, "gitlab gl: find the issue of "+notifytest.SampleKey+": timeout after 100ms")
}

// A dropped connection mid-lifecycle is retryable, and the retry carries
// on where the first attempt stopped.
func TestConnectionDropped(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewGitLabServer, newTestNotifier)
	st, err := send(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	srv.Down()
	_, err = send(t, n, notifytest.SampleMessage(notify.EventUpdate), st)
	require.ErrorContains(t, err, "gitlab gl-infra: update platform/infra/drift-alerts#1: ")
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
	srv.Up()
	_, err = send(t, n, notifytest.SampleMessage(notify.EventUpdate), st)
	require.NoError(t, err)
	is, _ := srv.Issue(1)
	require.Len(t, is.Comments(), 1)
}

// Redirects are not followed: the token is in a header that Go would
// forward to another host.
func TestRedirectNotFollowed(t *testing.T) {
	tokenFile := notifytest.SecretFile(t, "token", "glpat-"+strings.Repeat("a", 20))
	notifytest.RequireNoRedirect(t, http.StatusFound, func(redirect string) (notify.Notifier, error) {
		return New(Config{Name: "gl", TokenFile: tokenFile, Project: "g/p", APIURL: redirect}, nil, slog.New(slog.DiscardHandler))
	}, "gitlab gl: find the issue of "+notifytest.SampleKey+": status 302: redirects are not followed") // the token goes nowhere else
}

func TestPermanentMessageErrors(t *testing.T) {
	notifytest.RequireUnknownEventOf(t, notifytest.NewGitLabServer, newTestNotifier, []byte(`{"project":"x","iid":1}`), `gitlab gl-infra: unknown event "snooze"`)
}

// The token is in the PRIVATE-TOKEN header and nowhere else: not in a
// path, query, body, error, state or log line, whatever the server
// echoes.
func TestCanaryAbsentEverywhere(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewGitLabServer, newTestNotifier)
	secrets := srv.Secrets()
	echo := `{"message":{"token":["` + srv.Token + ` is invalid"]},"error":"bad ` + srv.Token + `","error_description":"` + srv.Token + `"}`
	var saved [][]byte
	var st []byte
	// The remediation's 200 is an unreadable answer.
	errs, states := notifytest.DeliverEchoing(srv, echo, 200, []int{400, 401, 403, 404, 422, 429, 500}, func(ev notify.Event) ([]byte, error) {
		next, err := n.Notify(t.Context(), notifytest.SampleMessage(ev), st, func(b []byte) error { saved = append(saved, b); return nil })
		if err == nil {
			st = next
		}
		return next, err
	})
	states = append(states, saved...)

	// All but the 404: a 404 on the stored issue sends the notifier
	// looking for the issue again, and it is there.
	require.Equal(t, 8, notifytest.RequireNoSecretsInResults(t, secrets, errs, states))
	require.NotEmpty(t, logs())
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
	for _, r := range srv.Requests() {
		require.Equal(t, srv.Token, r.Header.Get("PRIVATE-TOKEN"))
		notifytest.RequireNoSecretsIn(t, r.Path+"?"+r.Query+"\n"+string(r.Body), secrets)
		notifytest.RequireNoSecretsInHeader(t, r.Header, secrets, "Private-Token")
	}
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	token := "glpat-" + strings.Repeat("Ab3", 6) + "Zz"
	logger := slog.New(slog.DiscardHandler)
	cfg := func(file string) Config { return Config{Name: "gl", TokenFile: file, Project: "g/p"} }
	good := notifytest.OpenChecks{Vendor: "gitlab", Name: "gl", Key: "token_file", New: notifytest.NewOf(New, cfg)}.Require(t, files, token)

	for name, content := range map[string]string{"two": token + "\n" + token, "spaced": token[:10] + " " + token[11:], "utf8": token + "é"} {
		_, err := New(cfg(files.Write(name, content)), nil, logger)
		require.EqualError(t, err, `gitlab "gl": token_file "`+files.Path(name)+`": want one access token (printable ASCII, no spaces) on one line`)
		notifytest.RequireNoSecrets(t, err, []string{token, token[:10]})
	}

	n, err := New(cfg(good), nil, logger)
	require.NoError(t, err)
	require.Equal(t, "gl", n.Name())
	require.Equal(t, token, n.token)
	require.Equal(t, "https://gitlab.com/api/v4/", n.api.BaseURL().String())
	require.Equal(t, []string{"driftwatch"}, n.labels)

	for base, want := range map[string]string{
		"https://gitlab.corp.example":              "https://gitlab.corp.example/api/v4/",
		"https://gitlab.corp.example/":             "https://gitlab.corp.example/api/v4/",
		"https://corp.example/gitlab":              "https://corp.example/gitlab/api/v4/",
		"https://gitlab.corp.example/api/v4":       "https://gitlab.corp.example/api/v4/",
		"https://gitlab.corp.example:8443/api/v4/": "https://gitlab.corp.example:8443/api/v4/",
		"http://127.0.0.1:8929":                    "http://127.0.0.1:8929/api/v4/",
	} {
		c := cfg(good)
		c.APIURL = base
		n, err = New(c, nil, logger)
		require.NoError(t, err, base)
		require.Equal(t, want, n.api.BaseURL().String(), base)
	}
	c := cfg(good)
	c.Labels = []string{}
	n, err = New(c, nil, logger)
	require.NoError(t, err)
	require.Empty(t, n.labels, "an empty list: the class label only")
}
