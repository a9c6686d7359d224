package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Log is an open run log: plain text, or, when Events, a Server-Sent
// Events stream (the daemon streams a run in flight). Close it.
type Log struct {
	Events bool
	body   io.ReadCloser
}

// Read reads the answer's body as sent, control characters included
// (Copy writes it safe for a terminal).
func (l *Log) Read(p []byte) (int, error) { return l.body.Read(p) }

// Close closes the answer.
func (l *Log) Close() error { return l.body.Close() }

// Copy writes the log to w, every line made Printable (no terminal
// escape sequence or control character of the run's output reaches the
// terminal): plain text line by line; an event stream's lines until its
// end event, whose verdict it returns. An event stream that ends before
// its end event is ErrStreamCut.
func (l *Log) Copy(w io.Writer) (Status, error) {
	if !l.Events {
		return "", copyPrintable(w, l.body)
	}
	return copyEvents(l.body, w)
}

// Log requests run id's log, with the token as the read credential if the
// client has a token file. With follow it asks for an event stream, which
// lasts as long as the run does (no time limit but ctx's); without, for
// the text stored or written so far. Any status but 200 is a
// *StatusError: ErrUnauthorized for a missing or refused credential,
// ErrForbidden when the daemon serves logs to nobody.
func (c *Client) Log(ctx context.Context, id string, follow bool) (*Log, error) {
	token, err := c.token(true)
	if err != nil {
		return nil, err
	}
	u := c.base + "/api/v1/runs/" + url.PathEscape(id) + "/logs"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	authorize(req, token)
	hc := c.httpClient(logTimeout)
	if follow {
		req.Header.Set("Accept", "text/event-stream")
		hc = c.httpClient(0)
	} else {
		req.Header.Set("Accept", "text/plain")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, statusError(resp, token)
	}
	events := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	return &Log{Events: events, body: resp.Body}, nil
}

// FollowLog copies run id's log stream to w (each line Printable) until
// the run ends and returns its verdict (Log with follow, its answer read as an event
// stream).
func (c *Client) FollowLog(ctx context.Context, id string, w io.Writer) (Status, error) {
	l, err := c.Log(ctx, id, true)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return copyEvents(l.body, w)
}

// ErrStreamCut is an event stream that ended before its run did.
var ErrStreamCut = errors.New("the stream ended before the run did (daemon restarted?)")

// copyEvents copies an SSE log stream's data lines to w, one line per
// event made Printable, until the "end" event and returns its verdict.
// Comments (keep-alives) are skipped.
func copyEvents(r io.Reader, w io.Writer) (Status, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "end" {
				var end apitypes.LogEnd
				if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &end); err != nil {
					return "", fmt.Errorf("bad end event: %w", err)
				}
				return end.Status, nil
			}
			if data != nil {
				if _, err := fmt.Fprintln(w, Printable(strings.Join(data, "\n"))); err != nil {
					return "", err
				}
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimPrefix(strings.TrimPrefix(line, "event:"), " ")
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", ErrStreamCut
}
