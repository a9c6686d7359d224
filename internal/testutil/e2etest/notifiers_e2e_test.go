package e2etest

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// holdProxy is a reverse proxy in front of one vendor test server: TLS on
// the same test certificate (httptest's) for an https upstream, so the
// ca_file that trusts the vendor server trusts it too; plain HTTP for an
// http one (Slack's test server). It passes every request and answer
// through unchanged, except the one holdNext armed it for: that request
// reaches the vendor, which handles it, and the vendor's answer is held
// back from the daemon until the daemon hangs up. That is a crash between
// a vendor's side effect and the outbox recording it, made on demand.
type holdProxy struct {
	t        *testing.T
	srv      *httptest.Server
	upstream string
	client   *http.Client

	mu   sync.Mutex
	arms []*holdArm
}

// holdArm is one request to hold: the first with method whose path ends
// with suffix.
type holdArm struct {
	method, suffix string
	// held is closed once the vendor has answered the request (and the
	// answer is being held); released once the daemon has hung up.
	held, released chan struct{}
}

func newHoldProxy(t *testing.T, upstream string, client *http.Client) *holdProxy {
	t.Helper()
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := &holdProxy{t: t, upstream: upstream, client: &c}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if strings.HasPrefix(upstream, "https://") {
		p.srv.StartTLS()
	} else {
		p.srv.Start()
	}
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's base URL (https://127.0.0.1:port).
func (p *holdProxy) URL() string { return p.srv.URL }

// holdNext arms the proxy for the next request with method whose escaped
// path ends with suffix.
func (p *holdProxy) holdNext(method, suffix string) *holdArm {
	a := &holdArm{method: method, suffix: suffix, held: make(chan struct{}), released: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arms = append(p.arms, a)
	return a
}

// take returns the arm r matches, disarming it.
func (p *holdProxy) take(r *http.Request) *holdArm {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, a := range p.arms {
		if r.Method == a.method && strings.HasSuffix(r.URL.EscapedPath(), a.suffix) {
			p.arms = append(p.arms[:i], p.arms[i+1:]...)
			return a
		}
	}
	return nil
}

func (p *holdProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	// RequestURI keeps the path as sent (GitLab's %2F in a project path).
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.RequestURI, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	arm := p.take(r)
	resp, err := p.client.Do(req)
	if err != nil {
		// The vendor dropped the connection (an injected failure) or the
		// daemon hung up: so does the proxy.
		panic(http.ErrAbortHandler)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if arm != nil {
		close(arm.held)
		<-r.Context().Done()
		close(arm.released)
		panic(http.ErrAbortHandler)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rb)
}

// notifierServers are the six newer notifiers' vendor servers, the
// proxies the daemon reaches the HTTP ones through, and the config's
// notifiers: block naming them pd, teams, jsm, github, gitlab and mail.
type notifierServers struct {
	pd     *notifytest.PagerDutyServer
	teams  *notifytest.TeamsServer
	jsm    *notifytest.JSMServer
	gh     *notifytest.GitHubServer
	gl     *notifytest.GitLabServer
	smtp   *notifytest.SMTPServer
	pdP    *holdProxy
	teamsP *holdProxy
	jsmP   *holdProxy
	ghP    *holdProxy
	glP    *holdProxy
	// teamsURL is the webhook URL the daemon reads (the proxy's address,
	// the flow's path and signature): a secret.
	teamsURL  string
	notifiers string
}

// newNotifierNames are the notifiers' names in the config.
var newNotifierNames = []string{"pd", "teams", "jsm", "github", "gitlab", "mail"}

func newNotifierServers(t *testing.T, root string) *notifierServers {
	t.Helper()
	s := &notifierServers{
		pd: notifytest.NewPagerDutyServer(t), teams: notifytest.NewTeamsServer(t), jsm: notifytest.NewJSMServer(t),
		gh: notifytest.NewGitHubServer(t), gl: notifytest.NewGitLabServer(t),
		smtp: notifytest.NewSMTPServer(t, notifytest.SMTPOptions{}),
	}
	s.pdP = newHoldProxy(t, s.pd.URL(), s.pd.HTTPClient())
	s.jsmP = newHoldProxy(t, s.jsm.URL(), s.jsm.HTTPClient())
	s.glP = newHoldProxy(t, s.gl.URL(), s.gl.HTTPClient())
	ghBase := strings.TrimSuffix(s.gh.URL(), "/api/v3/")
	s.ghP = newHoldProxy(t, ghBase, s.gh.HTTPClient())
	wh, err := url.Parse(s.teams.WebhookURL())
	require.NoError(t, err)
	s.teamsP = newHoldProxy(t, wh.Scheme+"://"+wh.Host, s.teams.HTTPClient())
	pu, err := url.Parse(s.teamsP.URL())
	require.NoError(t, err)
	wh.Host = pu.Host
	s.teamsURL = wh.String()

	secrets := filepath.Join(root, "secrets")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	write := func(name, content string) string {
		p := filepath.Join(secrets, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	// Every httptest TLS server (the vendors' and the proxies') has the
	// same certificate.
	ca := write("httptest-ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.pd.Certificate().Raw})))
	s.notifiers = fmt.Sprintf(`notifiers:
  - name: pd
    type: pagerduty
    pagerduty: { routing_key_file: %s, url: "%s" }
    ca_file: %s
    timeout: 20s
  - name: teams
    type: teams
    teams: { webhook_url_file: %s }
    ca_file: %s
    timeout: 8s
  - name: jsm
    type: jsm
    jsm: { api_key_file: %s, api_url: "%s" }
    ca_file: %s
    timeout: 20s
  - name: github
    type: github
    github: { token_file: %s, repository: %s, api_url: "%s" }
    ca_file: %s
    timeout: 20s
  - name: gitlab
    type: gitlab
    gitlab: { token_file: %s, project: %s, api_url: "%s" }
    ca_file: %s
    timeout: 20s
  - name: mail
    type: email
    email:
      host: 127.0.0.1
      port: %d
      from: "driftwatch <driftwatch@example.com>"
      to: [oncall@example.com]
      username_file: %s
      password_file: %s
      tls: starttls
    ca_file: %s
    timeout: 20s`,
		write("pd-key", s.pd.RoutingKey+"\n"), s.pdP.URL(), ca,
		write("teams-url", s.teamsURL+"\n"), ca,
		write("jsm-key", s.jsm.APIKey+"\n"), s.jsmP.URL()+notifytest.JSMPathPrefix, ca,
		write("github-token", s.gh.Token+"\n"), s.gh.Repository(), s.ghP.URL()+"/api/v3/", ca,
		write("gitlab-token", s.gl.Token+"\n"), notifytest.GitLabProjectPath, s.glP.URL(), ca,
		s.smtp.Port, s.smtp.UsernameFile, s.smtp.PasswordFile, s.smtp.CAFile)
	return s
}

// secrets are every credential the daemon holds for them.
func (s *notifierServers) secrets() []string {
	out := []string{s.teamsURL, s.teams.WebhookURL(), s.teams.Sig, s.teams.WorkflowID}
	for _, x := range [][]string{s.pd.Secrets(), s.jsm.Secrets(), s.gh.Secrets(), s.gl.Secrets(), s.smtp.Secrets()} {
		out = append(out, x...)
	}
	return out
}

// requestsTo are the requests r holds with method whose path ends with
// suffix.
func requestsTo(rs []notifytest.Request, method, suffix string) []notifytest.Request {
	var out []notifytest.Request
	for _, r := range rs {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// notifierPending is GET /api/v1/notifiers: undelivered messages per
// notifier; a dead message fails the test.
func notifierPending(d *daemonProc) map[string]int {
	d.t.Helper()
	var body struct {
		Notifiers []struct {
			Name    string `json:"name"`
			Pending int    `json:"pending"`
			Dead    int    `json:"dead"`
		} `json:"notifiers"`
	}
	d.getJSON("/api/v1/notifiers", &body)
	out := map[string]int{}
	for _, n := range body.Notifiers {
		require.Zero(d.t, n.Dead, "notifier %s gave up on a message", n.Name)
		out[n.Name] = n.Pending
	}
	return out
}

// allDelivered reports whether every new notifier has nothing pending.
func allDelivered(d *daemonProc) bool {
	p := notifierPending(d)
	for _, n := range newNotifierNames {
		if v, ok := p[n]; !ok || v != 0 {
			return false
		}
	}
	return true
}

// mailHeader is header h of the i-th accepted message.
func mailHeader(t *testing.T, s *notifytest.SMTPServer, i int, h string) string {
	t.Helper()
	return s.Envelopes()[i].Message(t).Header.Get(h)
}

// TestNotifiersKill9 drives one real daemon, with PagerDuty, Teams, JSM,
// GitHub, GitLab and email notifiers, through a real Terraform drift's
// life: open, an update during which the daemon is killed with SIGKILL
// after every vendor handled the update but before any answer reached it,
// a restart on the same store that re-delivers the update, and a resolve
// through 5xx, 429, a timeout and an SMTP 451. Each vendor ends with
// exactly the effects it allows: one PagerDuty alert and one JSM alert
// for the incident, one GitHub and one GitLab issue with the update's
// comment once, the email re-sent with the same Message-ID, the Teams
// card re-sent identical; and no secret anywhere the daemon shows. It
// runs with Terraform and with OpenTofu.
func TestNotifiersKill9(t *testing.T) {
	parallel(t)
	forEachTool(t, testNotifiersKill9)
}

func testNotifiersKill9(t *testing.T, e *tfEnv) {
	_, out := e.twoFiles(t, "payments")

	s := newNotifierServers(t, e.root)
	const apiToken = "dw-api-token-notifiers-e2e-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(apiToken), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", external_url: "https://driftwatch.example.com", token_file: %s }
store: { path: %s }
allow_sub_minute_schedules: true
%s
alerts:
  default_notifiers: [%s]
workspaces:
  - name: payments
    source: { path: ./payments }
    owner: team-payments
    schedule: "@every 2s"
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"), s.notifiers, strings.Join(newNotifierNames, ", ")))

	var logs []*syncBuffer
	start := func() *daemonProc {
		d := startDaemon(t, cfg, listen)
		logs = append(logs, d.logs)
		return d
	}
	began := time.Now()
	d := start()
	d.eventually("a clean run", 60*time.Second, func() bool { return d.workspaces()["payments"].Status == "clean" })

	// 1. Drift: the incident opens at every vendor, once.
	key := incident.Key("payments", notify.ClassDrift)
	marker := "<!-- driftwatch:incident=" + key + " -->"
	require.NoError(t, os.WriteFile(filepath.Join(out, "a.txt"), []byte("hand edit"), 0o644))
	d.eventually("open delivered", 90*time.Second, func() bool { return allDelivered(d) && len(s.smtp.Envelopes()) == 1 })
	tOpen := time.Since(began)

	pdAlerts := s.pd.Alerts()
	require.Len(t, pdAlerts, 1)
	require.Equal(t, key, pdAlerts[0].DedupKey, "dedup_key is the incident key")
	require.Equal(t, "triggered", pdAlerts[0].Status)
	require.Equal(t, 1, pdAlerts[0].Triggers())
	require.Len(t, s.teams.Cards(), 1)
	require.Contains(t, string(s.teams.Requests()[0].Body), "dwtest_file.a")
	jsmAlerts := s.jsm.Alerts()
	require.Len(t, jsmAlerts, 1)
	require.Equal(t, key, jsmAlerts[0].Alias)
	require.Equal(t, "open", jsmAlerts[0].Status)
	require.Equal(t, 1, jsmAlerts[0].Count)
	require.Len(t, requestsTo(s.jsm.Requests(), http.MethodPost, "/v2/alerts"), 1, "one create")
	ghIssues := s.gh.Issues()
	require.Len(t, ghIssues, 1)
	require.Contains(t, ghIssues[0].Body, marker)
	require.Equal(t, "open", ghIssues[0].State)
	require.Empty(t, ghIssues[0].Comments)
	glIssues := s.gl.Issues()
	require.Len(t, glIssues, 1)
	require.Contains(t, glIssues[0].Description, marker)
	require.Equal(t, "opened", glIssues[0].State)
	require.Empty(t, glIssues[0].Comments())
	require.Equal(t, "open", mailHeader(t, s.smtp, 0, "X-Driftwatch-Event"))
	require.Equal(t, key, mailHeader(t, s.smtp, 0, "X-Driftwatch-Incident"))
	root := mailHeader(t, s.smtp, 0, "Message-ID")
	require.Regexp(t, `^<dw-.+@example\.com>$`, root)
	require.Empty(t, mailHeader(t, s.smtp, 0, "In-Reply-To"), "the open message is the thread's root")

	// 2. The drift changes. Every vendor handles the update, every answer
	// is held back, and the daemon is killed with all six in flight.
	arms := map[string]*holdArm{
		"pd":     s.pdP.holdNext(http.MethodPost, "/v2/enqueue"),
		"teams":  s.teamsP.holdNext(http.MethodPost, "/invoke"),
		"jsm":    s.jsmP.holdNext(http.MethodPost, "/notes"),
		"github": s.ghP.holdNext(http.MethodPost, "/comments"),
		"gitlab": s.glP.holdNext(http.MethodPost, "/notes"),
	}
	mailHeld := s.smtp.HoldNextData()
	require.NoError(t, os.WriteFile(filepath.Join(out, "b.txt"), []byte("hand edit"), 0o644))
	for _, name := range newNotifierNames {
		held := mailHeld
		if a, ok := arms[name]; ok {
			held = a.held
		}
		select {
		case <-held:
		case <-time.After(90 * time.Second):
			t.Fatalf("the update never reached %s", name)
		}
	}
	tHeld := time.Since(began)
	for name, a := range arms {
		select {
		case <-a.released:
			t.Fatalf("the daemon gave up on %s before it was killed: the test's timeouts are too short", name)
		default:
		}
	}
	// The vendors handled the update; the daemon heard nothing back.
	require.Equal(t, 2, s.pd.Alerts()[0].Triggers())
	require.Len(t, s.teams.Cards(), 2)
	require.Len(t, mustJSMAlert(t, s.jsm, key).Notes, 1)
	require.Len(t, s.gh.Issues()[0].Comments, 1)
	require.Len(t, s.gl.Issues()[0].Comments(), 1)
	require.Len(t, s.smtp.Envelopes(), 2)
	require.Equal(t, 1, notifierPending(d)["pd"], "not recorded as delivered")
	before := map[string]int{"github": len(s.gh.Requests()), "gitlab": len(s.gl.Requests())}
	require.Equal(t, -int(syscall.SIGKILL), d.stop(syscall.SIGKILL, 10*time.Second))

	d = start()
	d.eventually("update re-delivered after the restart", 90*time.Second, func() bool {
		return allDelivered(d) && len(s.smtp.Envelopes()) == 3
	})
	tRedelivered := time.Since(began)

	// PagerDuty: the resent trigger is de-duplicated into the one alert.
	pdAlerts = s.pd.Alerts()
	require.Len(t, pdAlerts, 1, "one alert for the dedup_key")
	a := pdAlerts[0]
	require.Equal(t, "triggered", a.Status)
	require.Equal(t, 3, a.Triggers(), "open, update, the update resent")
	require.Equal(t, a.Log[1], a.Log[2], "the resend is the same event")
	// Teams cannot de-duplicate: the same card twice, byte for byte.
	teamsReqs := requestsTo(s.teams.Requests(), http.MethodPost, "/invoke")
	require.Len(t, teamsReqs, 3)
	require.Len(t, s.teams.Cards(), 3)
	require.Equal(t, string(teamsReqs[1].Body), string(teamsReqs[2].Body), "the resent card is identical")
	// JSM: one alert for the alias; its note, which JSM cannot
	// de-duplicate, twice and identical.
	jsmAlerts = s.jsm.Alerts()
	require.Len(t, jsmAlerts, 1, "one alert for the alias")
	require.Equal(t, 1, jsmAlerts[0].Count, "no create after the open")
	require.Len(t, jsmAlerts[0].Notes, 2)
	require.Equal(t, jsmAlerts[0].Notes[0], jsmAlerts[0].Notes[1])
	// GitHub and GitLab: the replay reached them, and the update's
	// comment stays one (its marker is found).
	require.Greater(t, len(s.gh.Requests()), before["github"], "the update was replayed to GitHub")
	require.Greater(t, len(s.gl.Requests()), before["gitlab"], "the update was replayed to GitLab")
	ghIssues = s.gh.Issues()
	require.Len(t, ghIssues, 1, "one issue")
	require.Len(t, ghIssues[0].Comments, 1, "the update's comment once")
	require.Contains(t, ghIssues[0].Comments[0].Body, "<!-- driftwatch:message=")
	require.Contains(t, ghIssues[0].Comments[0].Body, "dwtest_file.b")
	require.Len(t, requestsTo(s.gh.Requests(), http.MethodPost, "/comments"), 1, "never posted twice")
	glIssues = s.gl.Issues()
	require.Len(t, glIssues, 1, "one issue")
	require.Len(t, glIssues[0].Comments(), 1, "the update's note once")
	require.Contains(t, glIssues[0].Comments()[0].Body, "<!-- driftwatch:message=")
	require.Len(t, requestsTo(s.gl.Requests(), http.MethodPost, "/notes"), 1, "never posted twice")
	// Email: the server had accepted the update's DATA; the resend is
	// the same message, same Message-ID, in the incident's thread.
	require.Equal(t, "update", mailHeader(t, s.smtp, 1, "X-Driftwatch-Event"))
	updID := mailHeader(t, s.smtp, 1, "Message-ID")
	require.NotEqual(t, root, updID)
	require.Equal(t, updID, mailHeader(t, s.smtp, 2, "Message-ID"), "the resend keeps its Message-ID")
	for _, i := range []int{1, 2} {
		require.Equal(t, root, mailHeader(t, s.smtp, i, "In-Reply-To"))
		require.Equal(t, root, mailHeader(t, s.smtp, i, "References"))
	}

	// 3. The drift is reverted while every vendor fails its first
	// attempt: 503, 429 with Retry-After, 502, 500, a Teams answer that
	// outlives the notifier's timeout, and an SMTP 451 at MAIL FROM. The
	// resolve reaches each once.
	s.pd.FailNext(notifytest.Failure{Status: http.StatusServiceUnavailable})
	s.jsm.FailNext(notifytest.Failure{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	s.gh.FailNext(notifytest.Failure{Status: http.StatusBadGateway})
	s.gl.FailNext(notifytest.Failure{Status: http.StatusInternalServerError})
	s.teams.FailNext(notifytest.Failure{Delay: time.Minute})
	s.smtp.FailNext(notifytest.SMTPFailure{At: notifytest.SMTPAtMail, Code: 451, Enhanced: [3]int{4, 3, 0}, Message: "Try again later"})
	pdReqs, jsmReqs, teamsN := len(s.pd.Requests()), len(s.jsm.Requests()), len(s.teams.Requests())
	require.NoError(t, os.WriteFile(filepath.Join(out, "a.txt"), []byte("v1"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "b.txt"), []byte("v1"), 0o644))
	d.eventually("resolve delivered", 120*time.Second, func() bool {
		return allDelivered(d) && len(s.smtp.Envelopes()) == 4 && d.workspaces()["payments"].Status == "clean"
	})
	tResolved := time.Since(began)
	time.Sleep(4 * time.Second) // clean runs go on: nothing else may arrive
	require.True(t, allDelivered(d))

	pdAlerts = s.pd.Alerts()
	require.Len(t, pdAlerts, 1)
	require.Equal(t, "resolved", pdAlerts[0].Status)
	require.Equal(t, "resolve", pdAlerts[0].Log[len(pdAlerts[0].Log)-1].EventAction)
	require.Len(t, pdAlerts[0].Log, 4, "the resolve applied once")
	require.Len(t, s.pd.Requests(), pdReqs+2, "the 503, then the resolve")
	teamsReqs = requestsTo(s.teams.Requests(), http.MethodPost, "/invoke")
	require.Len(t, s.teams.Cards(), 4, "the resolve's card once")
	require.Len(t, s.teams.Requests(), teamsN+2, "the timed-out attempt, then the resolve")
	require.Equal(t, string(teamsReqs[3].Body), string(teamsReqs[4].Body), "the retry is the same card")
	jsmAlerts = s.jsm.Alerts()
	require.Len(t, jsmAlerts, 1)
	require.Equal(t, "closed", jsmAlerts[0].Status)
	require.Len(t, s.jsm.Requests(), jsmReqs+2, "the 429, then the close")
	closes := 0
	for _, st := range s.jsm.Statuses() {
		if st.Action == "Close" {
			closes++
			require.True(t, st.Success, st.Status)
		}
	}
	require.Equal(t, 1, closes)
	ghIssues = s.gh.Issues()
	require.Len(t, ghIssues, 1)
	require.Equal(t, "closed", ghIssues[0].State)
	require.Equal(t, "completed", ghIssues[0].StateReason)
	require.Len(t, ghIssues[0].Comments, 2, "the update's and the resolve's")
	glIssues = s.gl.Issues()
	require.Len(t, glIssues, 1)
	require.Equal(t, "closed", glIssues[0].State)
	require.Len(t, glIssues[0].Comments(), 2, "the update's and the resolve's")
	require.Len(t, s.smtp.Envelopes(), 4)
	require.Equal(t, "resolve", mailHeader(t, s.smtp, 3, "X-Driftwatch-Event"))
	require.Equal(t, root, mailHeader(t, s.smtp, 3, "In-Reply-To"))

	// 4. No secret in anything the daemon shows: its output (both
	// processes), the status pages, the API, metrics and every run's log.
	var shown strings.Builder
	for _, l := range logs {
		shown.WriteString(l.String())
	}
	for _, p := range []string{"/", "/workspaces/payments", "/api/v1/workspaces", "/api/v1/workspaces/payments",
		"/api/v1/workspaces/payments/runs", "/api/v1/notifiers", "/api/v1/status", "/metrics"} {
		shown.WriteString(getOK(t, d, p, apiToken))
	}
	runs := d.runs("payments")
	require.NotEmpty(t, runs)
	for _, r := range runs {
		shown.WriteString(getOK(t, d, "/runs/"+r.ID, apiToken))
		shown.WriteString(logSnapshot(t, d, r.ID, apiToken))
	}
	require.Contains(t, shown.String(), "dwtest_file.b", "the canary check reads real content")
	for _, secret := range s.secrets() {
		require.NotContains(t, shown.String(), secret)
	}
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
	t.Logf("open delivered at %s, update held at %s, re-delivered at %s, resolved at %s, %d runs",
		tOpen.Round(time.Millisecond), tHeld.Round(time.Millisecond), tRedelivered.Round(time.Millisecond), tResolved.Round(time.Millisecond), len(runs))
}

// mustJSMAlert is the JSM alert with alias.
func mustJSMAlert(t *testing.T, s *notifytest.JSMServer, alias string) notifytest.JSMAlert {
	t.Helper()
	a, ok := s.Alert(alias)
	require.True(t, ok, "no JSM alert %s", alias)
	return a
}

// getOK is the body of GET path with the API token, which must answer
// 200.
func getOK(t *testing.T, d *daemonProc, path, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
	return string(b)
}
