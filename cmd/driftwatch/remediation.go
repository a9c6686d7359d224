package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/report"
)

// decideCmd is `driftwatch approve ID` and `driftwatch reject ID`: it calls
// the running daemon's API with the bearer token from --token-file.
func decideCmd(verb string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	serverURL := fs.String("server", "http://127.0.0.1:8080", "URL of the driftwatch daemon")
	tokenFile := fs.String("token-file", "", "file holding the API bearer token (server.token_file)")
	hash := fs.String("hash", "", "approve only if the change set hash is this one (as shown by the API)")
	// Accept the ID before or after the flags.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "driftwatch: unexpected argument %q\n", fs.Arg(0))
		return report.ExitError
	}
	if id == "" {
		fmt.Fprintf(stderr, "driftwatch: usage: driftwatch %s ID [--server URL] --token-file FILE\n", verb)
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
	var body []byte
	if *hash != "" {
		body, _ = json.Marshal(map[string]string{"change_set_hash": *hash})
	}
	url := strings.TrimSuffix(*serverURL, "/") + "/api/v1/remediations/" + id + "/" + verb
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Error     string `json:"error"`
		State     string `json:"state"`
		Workspace string `json:"workspace"`
	}
	_ = json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "driftwatch: %s %s: %s: %s\n", verb, id, resp.Status, out.Error)
		return report.ExitError
	}
	fmt.Fprintf(stdout, "remediation %s of workspace %s: %s\n", id, out.Workspace, out.State)
	return 0
}
