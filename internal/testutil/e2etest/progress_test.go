package e2etest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// arrival is when a reader received a line.
type arrival struct {
	line string
	at   time.Time
}

// readLines reads r line by line into a list of arrivals until it ends.
func readLines(r io.Reader, mu *sync.Mutex, into *[]arrival) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		mu.Lock()
		*into = append(*into, arrival{sc.Text(), time.Now()})
		mu.Unlock()
	}
}

// firstWith is when the first line containing s arrived (zero: none).
func firstWith(mu *sync.Mutex, as []arrival, s string) time.Time {
	mu.Lock()
	defer mu.Unlock()
	for _, a := range as {
		if strings.Contains(a.line, s) {
			return a.at
		}
	}
	return time.Time{}
}

// TestDaemonLiveProgress: a data source whose read takes 30 s is named in
// the run's live log while it is read, not only when the plan ends: in
// the SSE stream, in `driftwatch logs --follow` and in `driftwatch run
// --follow`, each receives "reading" at least 20 s before "read after".
func TestDaemonLiveProgress(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	e.workspace(t, "slow", map[string]string{"main.tf": fmt.Sprintf(slowWorkspace, "30s")})
	token := "dw-api-token-progress-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
workspaces:
  - name: slow
    source: { path: ./slow }
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db")))
	d := startDaemon(t, cfg, listen)

	const reading, read = "read     data.dwtest_sleep.slow: reading", "read     data.dwtest_sleep.slow: read after"
	var runID string
	d.eventually("the initial run started", 60*time.Second, func() bool {
		runs := d.runs("slow")
		if len(runs) == 1 && runs[0].Status == "running" {
			runID = runs[0].ID
			return true
		}
		return false
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var sse, logs, follow []arrival
	var wg sync.WaitGroup

	// The SSE stream and `driftwatch logs --follow` of the initial run.
	resp := openLogStream(t, ctx, d, runID, token)
	defer resp.Body.Close()
	wg.Go(func() { readLines(resp.Body, &mu, &sse) })
	lc := exec.CommandContext(ctx, driftwatchBin, "logs", runID, "--follow", "--server", d.base, "--token-file", tokenFile)
	lout, err := lc.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, lc.Start())
	wg.Go(func() { readLines(lout, &mu, &logs) })
	wg.Wait()
	require.NoError(t, lc.Wait())

	// `driftwatch run --follow` of a run of its own, once the first ended.
	rc := exec.CommandContext(ctx, driftwatchBin, "run", "slow", "--follow", "--server", d.base, "--token-file", tokenFile)
	rout, err := rc.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, rc.Start())
	readLines(rout, &mu, &follow)
	_ = rc.Wait()

	for name, as := range map[string][]arrival{"SSE": sse, "logs --follow": logs, "run --follow": follow} {
		start, end := firstWith(&mu, as, reading), firstWith(&mu, as, read)
		require.False(t, start.IsZero(), "%s: no line names the read as it starts:\n%v", name, as)
		require.False(t, end.IsZero(), "%s: no line says the read ended:\n%v", name, as)
		require.Greater(t, end.Sub(start), 20*time.Second, "%s: the read was shown as it started, not when the plan ended", name)
	}
}
