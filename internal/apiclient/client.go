package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Time limits of one call. A followed log has none: it lasts as long as
// the run, or its context.
const (
	callTimeout = 30 * time.Second // a JSON call, answer included
	logTimeout  = time.Minute      // a log snapshot, read to its end
)

// Client calls the API of the daemon at one URL. Make one with New; it is
// safe for concurrent use.
type Client struct {
	base      string // the server URL without a trailing slash
	tokenFile string // "" sends no credential
	hc        *http.Client
}

// New returns a client of the daemon at server (its URL; a trailing slash
// is ignored). tokenFile, if not "", holds the token to send: the API
// token (server.token_file), or for logs also the read token. hc nil is
// http.DefaultClient; its Timeout is not used, each call sets its own
// limit.
func New(server, tokenFile string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(server, "/"), tokenFile: tokenFile, hc: hc}
}

// TokenFileError is a token file that cannot be used: unreadable, empty,
// or more than one line. Its text names the file, never its content.
type TokenFileError struct {
	Path string
	Err  error
}

func (e *TokenFileError) Error() string { return e.Err.Error() }
func (e *TokenFileError) Unwrap() error { return e.Err }

// token reads the token file: "" without one. Checked, the content
// without surrounding whitespace must be one non-empty line; unchecked
// (cancel, approve and reject, which have always sent the file's trimmed
// content as it is) the daemon refuses a bad token.
func (c *Client) token(checked bool) (string, error) {
	if c.tokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return "", &TokenFileError{Path: c.tokenFile, Err: err}
	}
	token := strings.TrimSpace(string(b))
	switch {
	case !checked:
	case token == "":
		return "", &TokenFileError{Path: c.tokenFile, Err: fmt.Errorf("token file %s is empty", c.tokenFile)}
	case strings.ContainsAny(token, "\r\n"):
		return "", &TokenFileError{Path: c.tokenFile, Err: fmt.Errorf("token file %s holds more than one line: it must hold the token alone", c.tokenFile)}
	}
	return token, nil
}

// httpClient is hc with the time limit d (0: none).
func (c *Client) httpClient(d time.Duration) *http.Client {
	hc := *c.hc
	hc.Timeout = d
	return &hc
}

// authorize sets the bearer token, if any.
func authorize(req *http.Request, token string) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// StatusError is an answer with another status than the call expects. Its
// text is the status and the API's reason: "404 Not Found: unknown run".
type StatusError struct {
	Code    int    // the HTTP status code
	Status  string // the status line's text, as "409 Conflict"
	Message string // the API's reason (its "error"), "" if it gave none
	RunID   string // a trigger's 409: the run the workspace is busy with, if named
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return e.Status + ": " + e.Message
	}
	return e.Status
}

// Is matches the status sentinels (ErrNotFound, ...).
func (e *StatusError) Is(target error) bool {
	s, ok := target.(statusSentinel)
	return ok && int(s) == e.Code
}

// statusSentinel is the sentinel of one status code.
type statusSentinel int

func (s statusSentinel) Error() string { return http.StatusText(int(s)) }

// Sentinels of the statuses the API answers with a reason; errors.Is(err,
// ErrNotFound) finds a *StatusError of that code.
var (
	ErrUnauthorized error = statusSentinel(http.StatusUnauthorized)       // no or a wrong credential
	ErrForbidden    error = statusSentinel(http.StatusForbidden)          // the daemon serves this to nobody
	ErrNotFound     error = statusSentinel(http.StatusNotFound)           // unknown workspace, run, remediation or log
	ErrConflict     error = statusSentinel(http.StatusConflict)           // busy workspace, finished run, decided remediation
	ErrUnavailable  error = statusSentinel(http.StatusServiceUnavailable) // e.g. not the leader
)

// statusError reads an unexpected answer's reason. A daemon never repeats
// the token; should one, it is cut out.
func statusError(resp *http.Response, token string) *StatusError {
	b, _ := io.ReadAll(limit(resp.Body))
	var body apitypes.Error
	_ = json.Unmarshal(b, &body)
	return &StatusError{
		Code: resp.StatusCode, Status: resp.Status,
		Message: redact(body.Error, token), RunID: redact(body.RunID, token),
	}
}

func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[REDACTED]")
}

// DecodeError is an answer with the expected status whose body is not the
// JSON the API sends.
type DecodeError struct {
	Method, Path string
	Err          error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s %s: bad response: %v", e.Method, e.Path, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// call sends method path (with the token, if not "") and decodes the JSON
// answer, up to 4 MiB, into out; a status other than want is a
// *StatusError.
func (c *Client) call(ctx context.Context, method, path, token string, want int, out any) error {
	return c.callBody(ctx, method, path, token, nil, want, out)
}

// callBody is call with a JSON request body (nil: none).
func (c *Client) callBody(ctx context.Context, method, path, token string, body []byte, want int, out any) error {
	return c.callWithin(ctx, callTimeout, method, path, token, body, want, out)
}

// callWithin is callBody within limit rather than callTimeout.
func (c *Client) callWithin(ctx context.Context, limit time.Duration, method, path, token string, body []byte, want int, out any) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	authorize(req, token)
	resp, err := c.httpClient(0).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return statusError(resp, token)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(out); err != nil {
		return &DecodeError{Method: method, Path: path, Err: err}
	}
	return nil
}

// limit bounds an answer read whole: 1 MiB.
func limit(r io.Reader) io.Reader { return io.LimitReader(r, 1<<20) }
