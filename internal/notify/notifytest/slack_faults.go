package notifytest

import (
	"net/http"
	"slices"
	"time"
)

// FailNext makes the next n requests (any method) fail without effect:
// HTTP status (200 for an ok:false answer), Slack error slackErr in the
// body ("" for none), and a Retry-After header when retryAfter > 0
// (rounded up to whole seconds).
func (s *SlackServer) FailNext(n int, status int, slackErr string, retryAfter time.Duration) {
	s.FailNextOn("", n, status, slackErr, retryAfter)
}

// FailNextOn is FailNext for requests to one method ("chat.update",
// "webhook", …) only.
func (s *SlackServer) FailNextOn(method string, n int, status int, slackErr string, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, slackFailure{method: method, status: status, slackErr: slackErr, retryAfter: retryAfter})
	}
}

// FailNextRaw answers the next request (any method) with exactly this:
// the status, a Retry-After header if retryAfter is not empty, and body
// as application/json, after holding the answer back for delay (until the
// client gives up or the server stops, whichever is first).
func (s *SlackServer) FailNextRaw(status int, retryAfter, body string, delay time.Duration) {
	if status == 0 {
		status = http.StatusInternalServerError
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, slackFailure{status: status, raw: &slackRaw{retryAfter: retryAfter, body: body, delay: delay}})
}

// LoseNext processes the next n requests to method ("" any) normally but
// drops their responses (the connection closes): a post that happened
// although the client saw an error, as after a timeout or a crash.
func (s *SlackServer) LoseNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.lose = append(s.lose, method)
	}
}

// Down makes the server close every connection without answering until Up.
func (s *SlackServer) Down() {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	s.srv.CloseClientConnections()
}

// Up undoes Down.
func (s *SlackServer) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
}

// SetLatency delays every answer by d (0: none), for timeout tests.
func (s *SlackServer) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

func (s *SlackServer) takeFailure(method string) (slackAnswer, bool) {
	for i, f := range s.failures {
		if f.method != "" && f.method != method {
			continue
		}
		s.failures = slices.Delete(s.failures, i, i+1)
		ans := slackAnswer{status: f.status, retryAfter: f.retryAfter, slackErr: f.slackErr, raw: f.raw}
		switch {
		case f.raw != nil:
		case method == "webhook":
			ans.text = f.slackErr
		case f.slackErr != "":
			ans.body = map[string]any{"ok": false, "error": f.slackErr}
		default:
			ans.text = http.StatusText(f.status)
		}
		return ans, true
	}
	return slackAnswer{}, false
}

func (s *SlackServer) takeLose(method string) bool {
	for i, m := range s.lose {
		if m == "" || m == method {
			s.lose = slices.Delete(s.lose, i, i+1)
			return true
		}
	}
	return false
}
