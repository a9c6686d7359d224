package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/driftwatch/driftwatch/internal/apiclient"
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
	c := apiclient.New(*serverURL, *tokenFile, nil)
	var (
		rem apiclient.Remediation
		err error
	)
	if verb == "approve" {
		rem, err = c.Approve(context.Background(), id, *hash)
	} else {
		rem, err = c.Reject(context.Background(), id)
	}
	var se *apiclient.StatusError
	var de *apiclient.DecodeError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "driftwatch: %s %s: %s: %s\n", verb, id, se.Status, se.Message)
		return report.ExitError
	case errors.As(err, &de):
		// A 200 recorded the decision even if its answer is unreadable:
		// print what was read.
	case err != nil:
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	fmt.Fprintf(stdout, "remediation %s of workspace %s: %s\n", id, rem.Workspace, rem.State)
	return 0
}
