package opsgenie

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/opsgenie/opsgenie-go-sdk-v2/alert"
	"github.com/opsgenie/opsgenie-go-sdk-v2/client"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/genie"
)

// Notifier delivers messages to OpsGenie. It implements notify.Notifier.
type Notifier struct {
	name       string
	logger     *slog.Logger
	key        string
	responders []Responder
	cli        *alert.Client
	tr         *callTransport

	// callMu serialises SDK calls, so the transport knows whose call a
	// request belongs to.
	callMu sync.Mutex

	// polls are the waits before each request-status poll after a create.
	polls []time.Duration
}

var _ notify.Notifier = (*Notifier)(nil)

// defaultPolls: OpsGenie usually processes a request within a second;
// about 3.5 s in all keeps a Notify call short when it does not.
var defaultPolls = []time.Duration{200 * time.Millisecond, 300 * time.Millisecond, 1 * time.Second, 2 * time.Second}

// New validates cfg, reads the API key file and builds the SDK client.
// It does no network I/O. hc (nil: a default client) is what requests go
// through (a proxy, a private CA, a test server); it is copied: the SDK
// sets the copy's Timeout, and its transport is wrapped.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	key, err := notify.Open("opsgenie", cfg.Name, logger, cfg.Validate, notify.Secret{Key: "api_key_file", Path: cfg.APIKeyFile,
		Want: "the key must be one line without spaces",
		OK:   func(k string) bool { return !strings.ContainsAny(k, " \t\r\n") }})
	if err != nil {
		return nil, err
	}
	// A copy: the caller's client is never changed.
	httpClient := &http.Client{}
	if hc != nil {
		c := *hc
		httpClient = &c
	}
	base := httpClient.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr := &callTransport{base: base}
	httpClient.Transport = tr

	n := &Notifier{
		name:       cfg.Name,
		logger:     logger.With("notifier", cfg.Name),
		key:        key,
		responders: cfg.Responders,
		tr:         tr,
		polls:      defaultPolls,
	}
	cli, err := alert.NewClient(&client.Config{
		ApiKey:         key,
		OpsGenieAPIURL: apiURL(cfg),
		HttpClient:     httpClient,
		RequestTimeout: cmp.Or(cfg.Timeout, DefaultTimeout),
		// 0 would mean the default of 4 retries; with RetryPolicy never
		// retrying, the count does not matter (see doc.go).
		RetryCount:  1,
		RetryPolicy: func(context.Context, *http.Response, error) (bool, error) { return false, nil },
		Logger:      sdkLogger(n.logger, n.redact),
	})
	if err != nil {
		return nil, fmt.Errorf("opsgenie %q: %s", cfg.Name, n.redact(err.Error()))
	}
	n.cli = cli
	return n, nil
}

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// state is what the notifier keeps per incident between messages.
type state struct {
	Priority alert.Priority `json:"priority,omitempty"`
	AlertID  string         `json:"alert_id,omitempty"`
}

// Notify implements notify.Notifier.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, prev []byte, _ func([]byte) error) ([]byte, error) {
	if !genie.ValidAlias(m.Incident.Key) {
		return prev, fmt.Errorf("opsgenie %s: incident key %q cannot be an alias (want [A-Za-z0-9._-], at most %d characters)", n.name, m.Incident.Key, genie.MaxAlias)
	}
	var st state
	if len(prev) > 0 {
		// A state we cannot read is treated as none: the worst outcome is
		// one redundant priority update.
		if err := json.Unmarshal(prev, &st); err != nil {
			n.logger.Warn("ignoring unreadable notifier state", "incident", m.Incident.Key, "err", err)
			st = state{}
		}
	}
	var err error
	switch m.Event {
	case notify.EventOpen, notify.EventRenotify:
		st, err = n.open(ctx, m, st)
	case notify.EventUpdate:
		st, err = n.update(ctx, m, st)
	case notify.EventRemediation:
		if m.Remediation == nil {
			return prev, fmt.Errorf("opsgenie %s: message %s: remediation event without its remediation", n.name, m.ID)
		}
		// A note, and a priority raised with the severity of a failed apply.
		st, err = n.update(ctx, m, st)
	case notify.EventResolve:
		if err = n.resolve(ctx, m); err == nil {
			return nil, nil
		}
	default:
		return prev, fmt.Errorf("opsgenie %s: unknown event %q", n.name, m.Event)
	}
	if err != nil {
		return prev, err
	}
	out, err := json.Marshal(st)
	if err != nil {
		return prev, fmt.Errorf("opsgenie %s: state: %w", n.name, err)
	}
	return out, nil
}

func (n *Notifier) open(ctx context.Context, m notify.Message, st state) (state, error) {
	req := buildCreate(m, n.responders)
	var res *alert.AsyncAlertResult
	if err := n.exec(ctx, "create alert", m.Incident.Key, func() (err error) {
		res, err = n.cli.Create(ctx, req)
		return err
	}); err != nil {
		return st, err
	}
	id, err := n.awaitCreate(ctx, m.Incident.Key, res.RequestId)
	if err != nil {
		return st, err
	}
	if id != "" {
		st.AlertID = id
	}
	// A renotify on an open alert is de-duplicated: the create did not
	// change its priority.
	if m.Event == notify.EventRenotify && st.Priority != "" && st.Priority != req.Priority {
		if err := n.setPriority(ctx, m); err != nil {
			return st, err
		}
	}
	st.Priority = req.Priority
	return st, nil
}

func (n *Notifier) update(ctx context.Context, m notify.Message, st state) (state, error) {
	// Idempotent first, so a retry after a failed note does not need it.
	if want := priority(m.Incident.Severity); st.Priority != want {
		if err := n.setPriority(ctx, m); err != nil {
			return st, err
		}
		st.Priority = want
	}
	req := buildNote(m)
	err := n.exec(ctx, "add note to alert", m.Incident.Key, func() error {
		_, err := n.cli.AddNote(ctx, req)
		return err
	})
	return st, err
}

func (n *Notifier) setPriority(ctx context.Context, m notify.Message) error {
	req := buildPriority(m)
	return n.exec(ctx, "update priority of alert", m.Incident.Key, func() error {
		_, err := n.cli.UpdatePriority(ctx, req)
		return err
	})
}

func (n *Notifier) resolve(ctx context.Context, m notify.Message) error {
	req := buildClose(m)
	return n.exec(ctx, "close alert", m.Incident.Key, func() error {
		_, err := n.cli.Close(ctx, req)
		return err
	})
}

// awaitCreate polls the status of an accepted create. The 202 was the
// delivery: only a processed failure is an error; a status still missing
// after the last poll, a failed poll or a done ctx count as delivered.
func (n *Notifier) awaitCreate(ctx context.Context, alias, requestID string) (alertID string, err error) {
	if requestID == "" {
		return "", nil
	}
	for _, wait := range n.polls {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", nil
		case <-t.C:
		}
		var st *alert.RequestStatusResult
		err := n.exec(ctx, "request status of alert", alias, func() (err error) {
			st, err = n.cli.GetRequestStatus(ctx, &alert.GetRequestStatusRequest{RequestId: requestID})
			return err
		})
		if err != nil {
			if isNotProcessed(err) {
				continue
			}
			n.logger.Debug("create accepted, request status unknown", "incident", alias, "err", err)
			return "", nil
		}
		if !st.IsSuccess {
			return "", fmt.Errorf("opsgenie %s: create alert %q: request %s failed: %s", n.name, alias, requestID, n.redact(notify.Truncate(notify.OneLine(st.Status), 300)))
		}
		return st.AlertID, nil
	}
	n.logger.Debug("create accepted, not processed yet", "incident", alias, "polls", len(n.polls))
	return "", nil
}

// exec runs one SDK call. The SDK ignores ctx, so the call runs in a
// goroutine and exec returns when ctx is done; the transport also aborts
// the call's requests then. Errors come back classified and redacted.
func (n *Notifier) exec(ctx context.Context, op, alias string, fn func() error) error {
	type result struct {
		sent bool
		ra   time.Duration
		err  error
	}
	done := make(chan result, 1)
	go func() {
		n.callMu.Lock()
		defer n.callMu.Unlock()
		if ctx.Err() != nil {
			done <- result{err: ctx.Err()}
			return
		}
		c := &call{ctx: ctx}
		n.tr.set(c)
		err := fn()
		n.tr.set(nil)
		sent, ra := c.done()
		done <- result{sent, ra, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done: // finished at the same time: keep its result
		default:
			return notify.Interrupted(ctx, fmt.Sprintf("opsgenie %s: %s %q", n.name, op, alias))
		}
	}
	if r.err == nil {
		return nil
	}
	return n.classify(ctx, op, alias, r.sent, r.ra, r.err)
}

// classify turns an SDK error into a redacted error that tells the outbox
// whether to retry. SDK errors are never wrapped: their text may carry
// what the server echoed.
func (n *Notifier) classify(ctx context.Context, op, alias string, sent bool, ra time.Duration, err error) error {
	if done := notify.Interrupted(ctx, fmt.Sprintf("opsgenie %s: %s %q", n.name, op, alias)); done != nil {
		return done
	}
	var apiErr *client.ApiError
	if errors.As(err, &apiErr) {
		e := &APIError{StatusCode: apiErr.StatusCode, Code: apiErr.ErrorHeader, Message: n.redact(notify.Truncate(notify.OneLine(apiErr.Message), 300))}
		s := notify.Sender{Prefix: "opsgenie " + n.name}
		return s.StatusError(fmt.Sprintf("%s %q", op, alias), apiErr.StatusCode, ra, e)
	}
	msg := n.redact(notify.Truncate(err.Error(), 500))
	if !sent {
		// Refused before any request went out: validation, not transport.
		return fmt.Errorf("opsgenie %s: %s %q: %s", n.name, op, alias, msg)
	}
	// Transport failure, timeout or an unreadable response.
	return notify.Retryable(fmt.Errorf("opsgenie %s: %s %q: %s", n.name, op, alias, msg), 0)
}

func isNotProcessed(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound && e.Code == "RequestNotProcessed"
}

// redact removes the API key from s.
func (n *Notifier) redact(s string) string { return notify.Redact(s, n.key) }

// APIError is an error answer of OpsGenie, redacted (notify.APIError).
type APIError = notify.APIError
