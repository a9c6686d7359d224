package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/report"
)

// runIDArgs parses "ID [flags]" or "[flags] ID" with fs.
func runIDArgs(fs *flag.FlagSet, args []string, stderr io.Writer, usage string) (string, bool) {
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return "", false
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "driftwatch: unexpected argument %q\n", fs.Arg(0))
		return "", false
	}
	if id == "" {
		fmt.Fprintln(stderr, "driftwatch: usage: "+usage)
		return "", false
	}
	return id, true
}

// apiError is the message of a JSON error response, or the status.
func apiError(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &out) == nil && out.Error != "" {
		return resp.Status + ": " + out.Error
	}
	return resp.Status
}

// logsCmd is `driftwatch logs RUN_ID [--follow] [--server URL] [--token-file
// FILE]`: it prints a run's log from a running daemon. With --follow it
// streams an in-flight run's log (Server-Sent Events) until the run ends
// and prints the verdict on stderr; without, it prints the log stored or
// written so far. Logs need a read credential unless the daemon opens
// reads (server.open_reads): the token in --token-file.
func logsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serverURL := fs.String("server", "http://127.0.0.1:8080", "URL of the driftwatch daemon")
	follow := fs.Bool("follow", false, "stream the log of a run in flight until it ends")
	fs.BoolVar(follow, "f", false, "short for --follow")
	tokenFile := fs.String("token-file", "", "file holding the API token (server.token_file) or the read token (server.read_token_file); needed unless the daemon has server.open_reads")
	id, ok := runIDArgs(fs, args, stderr, "driftwatch logs RUN_ID [--follow] [--server URL] [--token-file FILE]")
	if !ok {
		return report.ExitError
	}
	var token string
	if *tokenFile != "" {
		var err error
		if token, err = loadToken(*tokenFile); err != nil {
			fmt.Fprintf(stderr, "driftwatch: %v\n", err)
			return report.ExitError
		}
	}
	resp, err := openLog(context.Background(), *serverURL, id, *follow, token)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: logs %s: %s\n", id, logError(err, *serverURL, *tokenFile))
		return report.ExitError
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if _, err := io.Copy(stdout, resp.Body); err != nil {
			fmt.Fprintf(stderr, "driftwatch: logs %s: %v\n", id, err)
			return report.ExitError
		}
		return 0
	}
	verdict, err := printEvents(resp.Body, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: logs %s: %v\n", id, err)
		return report.ExitError
	}
	fmt.Fprintf(stderr, "run %s: %s\n", id, verdict)
	return 0
}

// loadToken reads a token file: its content without surrounding
// whitespace, which must be one non-empty line. Errors never show it.
func loadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	switch {
	case token == "":
		return "", fmt.Errorf("token file %s is empty", path)
	case strings.ContainsAny(token, "\r\n"):
		return "", fmt.Errorf("token file %s holds more than one line: it must hold the token alone", path)
	}
	return token, nil
}

// openLog requests run id's log from the daemon at serverURL: with follow
// an event stream (no client timeout: it lasts as long as the run, or ctx),
// else text. token, if not "", is sent as the read credential. A status
// other than 200 is an *apiStatusError naming the API's reason.
func openLog(ctx context.Context, serverURL, id string, follow bool, token string) (*http.Response, error) {
	u := strings.TrimSuffix(serverURL, "/") + "/api/v1/runs/" + url.PathEscape(id) + "/logs"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: time.Minute}
	if follow {
		req.Header.Set("Accept", "text/event-stream")
		client.Timeout = 0
	} else {
		req.Header.Set("Accept", "text/plain")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, &apiStatusError{code: resp.StatusCode, msg: apiError(resp)}
	}
	return resp, nil
}

// logError explains a failed log read; a refused credential (401) or a
// daemon that serves logs to nobody (403) says what to do. It never shows
// the token.
func logError(err error, serverURL, tokenFile string) string {
	var se *apiStatusError
	if !errors.As(err, &se) {
		return err.Error()
	}
	server := redactedURL(strings.TrimSuffix(serverURL, "/"))
	switch {
	case se.code == http.StatusUnauthorized && tokenFile == "":
		return fmt.Sprintf("%s: the daemon at %s needs a read credential for logs: pass --token-file FILE holding its API token (server.token_file) or its read token (server.read_token_file)", se.msg, server)
	case se.code == http.StatusUnauthorized:
		return fmt.Sprintf("%s: the daemon at %s rejected the token in %s (it must hold the daemon's server.token_file or server.read_token_file token)", se.msg, server, tokenFile)
	case se.code == http.StatusForbidden:
		return fmt.Sprintf("%s (the daemon at %s serves logs to nobody until it is configured so)", se.msg, server)
	}
	return se.msg
}

// printEvents copies an SSE log stream's data lines to w until the "end"
// event and returns its verdict.
func printEvents(r io.Reader, w io.Writer) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "end" {
				var end struct {
					Status string `json:"status"`
				}
				if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &end); err != nil {
					return "", fmt.Errorf("bad end event: %w", err)
				}
				return end.Status, nil
			}
			if data != nil {
				if _, err := fmt.Fprintln(w, strings.Join(data, "\n")); err != nil {
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
	return "", errors.New("the stream ended before the run did (daemon restarted?)")
}

// cancelCmd is `driftwatch cancel RUN_ID [--server URL] --token-file FILE`:
// a queued run is cancelled at once, a running one is asked to stop (it is
// recorded cancelled once Terraform has stopped or its Job is deleted).
func cancelCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serverURL := fs.String("server", "http://127.0.0.1:8080", "URL of the driftwatch daemon")
	tokenFile := fs.String("token-file", "", "file holding the API bearer token (server.token_file)")
	id, ok := runIDArgs(fs, args, stderr, "driftwatch cancel RUN_ID [--server URL] --token-file FILE")
	if !ok {
		return report.ExitError
	}
	if *tokenFile == "" {
		fmt.Fprintln(stderr, "driftwatch: --token-file is required")
		return report.ExitError
	}
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	u := strings.TrimSuffix(*serverURL, "/") + "/api/v1/runs/" + url.PathEscape(id) + "/cancel"
	req, err := http.NewRequest(http.MethodPost, u, nil)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		fmt.Fprintf(stderr, "driftwatch: cancel %s: %s\n", id, apiError(resp))
		return report.ExitError
	}
	var out struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		fmt.Fprintf(stderr, "driftwatch: cancel %s: bad response: %v\n", id, err)
		return report.ExitError
	}
	if out.Status == "cancelled" {
		fmt.Fprintf(stdout, "run %s: cancelled (it was queued and never started)\n", id)
		return 0
	}
	fmt.Fprintf(stdout, "run %s: %s\n", id, out.Status)
	return 0
}
