package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
)

// ProceedRoute is the ServeMux pattern ProceedHandler is served on (by a
// CallbackServer): a remediation pod asks it, right before `terraform
// apply`, whether it may apply (the kill switch lives in the daemon).
const ProceedRoute = "GET /internal/v1/runs/{id}/proceed"

// ProceedPath returns the path of runID's proceed check (ProceedRoute's).
func ProceedPath(runID string) string {
	return "/internal/v1/runs/" + url.PathEscape(runID) + "/proceed"
}

// ProceedFunc answers whether remediation run runID may apply now: nil to
// proceed, else why not (a secret-free refusal, e.g. engine.CodePaused).
type ProceedFunc func(ctx context.Context, runID string) *engine.Refusal

// ProceedAnswer is the proceed check's answer (200): Refusal is set
// exactly when Proceed is false.
type ProceedAnswer struct {
	Proceed bool            `json:"proceed"`
	Refusal *engine.Refusal `json:"refusal,omitempty"`
}

// ProceedHandler returns the http.Handler of ProceedRoute. A check is
// authenticated like a result, with the run's token, and refused like one
// (401; 403 for an unknown run or a wrong token alike; 409 once the result
// is delivered; 410), but consumes nothing: the token still delivers the
// result, once. A run that passes gets 200 and a ProceedAnswer from
// ReceiverOptions.Proceed; 501 without one.
func (r *Receiver) ProceedHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		refuse, ok := r.admit(w, req, http.MethodGet, "proceed check refused", "result already delivered")
		if !ok {
			return
		}
		if r.proceed == nil {
			refuse(http.StatusNotImplemented, "this daemon does not answer proceed checks")
			return
		}
		runID := req.PathValue("id")
		ans := ProceedAnswer{Refusal: r.proceed(req.Context(), runID)}
		ans.Proceed = ans.Refusal == nil
		if !ans.Proceed {
			r.log.Warn("remediation apply held back", "run_id", runID, "code", ans.Refusal.Code, "reason", ans.Refusal.Reason)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ans)
	})
}

// Checker asks the daemon's proceed check, failing closed. The zero value
// is ready to use.
type Checker struct {
	// Client sends the requests (default: 10 s timeout per attempt).
	Client *http.Client
	// Attempts bounds the tries (default 6); Backoff is the first wait
	// between them (default 1 s), doubling: about 30 s of waits in all,
	// enough for a daemon pod's restart.
	Attempts int
	Backoff  time.Duration
}

// Check asks url (ProceedPath), with the run's token, whether the apply
// may proceed: nil when the daemon answers so; its refusal when it says
// not (the kill switch is on); and a engine.CodeDaemonUnreachable
// refusal for anything else within Attempts: no connection, a timeout, an
// error status (403 and 404, as for a run a restarting daemon has not
// re-armed yet, and 5xx are tried again, any other at once) or an answer
// it cannot read. Never an error: not
// knowing means not applying.
func (c *Checker) Check(ctx context.Context, url, token string) *engine.Refusal {
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = 6
	}
	wait := c.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	var err error
	for attempt := 1; ; attempt++ {
		var ans ProceedAnswer
		var again bool
		ans, again, err = c.ask(ctx, client, url, token)
		if err == nil {
			return ans.Refusal
		}
		if !again || attempt == attempts {
			break
		}
		select {
		case <-ctx.Done():
			err = fmt.Errorf("%w (last: %w)", context.Cause(ctx), err)
		case <-time.After(wait):
			wait *= 2
			continue
		}
		break
	}
	return &engine.Refusal{Code: engine.CodeDaemonUnreachable, Reason: fmt.Sprintf(
		"could not confirm with the daemon that remediation is not paused: %v: nothing applied", err)}
}

// ask makes one attempt; again tells whether its failure may be transient.
func (c *Checker) ask(ctx context.Context, client *http.Client, url, token string) (ans ProceedAnswer, again bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ans, false, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return ans, true, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return ans, true, fmt.Errorf("read proceed answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		return ans, retryable(resp.StatusCode), fmt.Errorf("proceed check answered %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), line)
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return ans, false, fmt.Errorf("decode proceed answer: %w", err)
	}
	if ans.Proceed != (ans.Refusal == nil) {
		return ProceedAnswer{}, false, errors.New("inconsistent proceed answer: proceed with a refusal, or neither")
	}
	return ans, false, nil
}
