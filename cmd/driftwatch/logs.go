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
	log, err := apiclient.New(*serverURL, *tokenFile, nil).Log(context.Background(), id, *follow)
	var tfe *apiclient.TokenFileError
	switch {
	case errors.As(err, &tfe):
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	case err != nil:
		fmt.Fprintf(stderr, "driftwatch: logs %s: %s\n", id, logError(err, *serverURL, *tokenFile))
		return report.ExitError
	}
	defer log.Close()
	verdict, err := log.Copy(stdout)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: logs %s: %v\n", id, err)
		return report.ExitError
	}
	if log.Events {
		fmt.Fprintf(stderr, "run %s: %s\n", id, verdict)
	}
	return 0
}

// logError explains a failed log read; a refused credential (401) or a
// daemon that serves logs to nobody (403) says what to do. It never shows
// the token.
func logError(err error, serverURL, tokenFile string) string {
	var se *apiclient.StatusError
	if !errors.As(err, &se) {
		return err.Error()
	}
	server := redactedURL(strings.TrimSuffix(serverURL, "/"))
	switch {
	case errors.Is(se, apiclient.ErrUnauthorized) && tokenFile == "":
		return fmt.Sprintf("%s: the daemon at %s needs a read credential for logs: pass --token-file FILE holding its API token (server.token_file) or its read token (server.read_token_file)", se, server)
	case errors.Is(se, apiclient.ErrUnauthorized):
		return fmt.Sprintf("%s: the daemon at %s rejected the token in %s (it must hold the daemon's server.token_file or server.read_token_file token)", se, server, tokenFile)
	case errors.Is(se, apiclient.ErrForbidden):
		return fmt.Sprintf("%s (the daemon at %s serves logs to nobody until it is configured so)", se, server)
	}
	return se.Error()
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
	res, err := apiclient.New(*serverURL, *tokenFile, nil).Cancel(context.Background(), id)
	var se *apiclient.StatusError
	var de *apiclient.DecodeError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "driftwatch: cancel %s: %s\n", id, se)
		return report.ExitError
	case errors.As(err, &de):
		fmt.Fprintf(stderr, "driftwatch: cancel %s: bad response: %v\n", id, de.Err)
		return report.ExitError
	case err != nil:
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	if res.Status == apiclient.StatusCancelled {
		fmt.Fprintf(stdout, "run %s: cancelled (it was queued and never started)\n", id)
		return 0
	}
	fmt.Fprintf(stdout, "run %s: %s\n", id, res.Status)
	return 0
}
