package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

func TestWindows(t *testing.T) {
	t1, t2, t3 := time.Unix(100, 0).UTC(), time.Unix(200, 0).UTC(), time.Unix(300, 0).UTC()
	known := drift.Finding{Kind: drift.KindDrift, Address: "x.known", Window: &drift.Window{From: t1, To: t2},
		Attribution: &drift.Attribution{Actor: "alice"}}
	failed := drift.Finding{Kind: drift.KindDrift, Address: "x.failed", Window: &drift.Window{To: t2}, AttributionError: "attribution failed: boom"}
	old := drift.Finding{Kind: drift.KindDrift, Address: "x.old"} // recorded before windows existed
	wasPending := drift.Finding{Kind: drift.KindPending, Address: "x.new"}
	prior := &Prior{Findings: []drift.Finding{known, failed, old, wasPending}, CheckedAt: t2}

	fs := []drift.Finding{
		{Kind: drift.KindDrift, Address: "x.known"},
		{Kind: drift.KindDrift, Address: "x.failed"},
		{Kind: drift.KindDrift, Address: "x.old"},
		{Kind: drift.KindDrift, Address: "x.new"},
		{Kind: drift.KindDrift, Address: "x.ignored", Ignored: true},
		{Kind: drift.KindPending, Address: "x.pending"},
	}
	fresh := windows(prior, fs, t3)
	require.Equal(t, []int{3}, fresh, "only drift first seen, not ignored, is asked about")
	require.Equal(t, known.Window, fs[0].Window, "the first window is kept")
	require.Equal(t, known.Attribution, fs[0].Attribution)
	require.Equal(t, failed.AttributionError, fs[1].AttributionError)
	require.Equal(t, &drift.Window{To: t2}, fs[2].Window)
	require.Equal(t, &drift.Window{From: t2, To: t3}, fs[3].Window, "from the last clean check to this one")
	require.Equal(t, &drift.Window{From: t2, To: t3}, fs[4].Window)
	require.Nil(t, fs[5].Window)

	fs = []drift.Finding{{Kind: drift.KindDrift, Address: "x.a"}}
	require.Equal(t, []int{0}, windows(&Prior{}, fs, t3))
	require.Equal(t, &drift.Window{To: t3}, fs[0].Window, "no clean check before: no start")
	fs = []drift.Finding{{Kind: drift.KindDrift, Address: "x.a"}}
	require.Equal(t, []int{0}, windows(nil, fs, t3))
	require.Nil(t, fs[0].Window, "no history (the one-shot audit): no window")
}

// script writes an executable shell script.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "attribute.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700))
	return p
}

func TestCheckAttributes(t *testing.T) {
	const canary = "CANARY-secret-5d0c"
	dir := t.TempDir()
	queries := filepath.Join(dir, "queries")
	secret := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(secret, []byte(canary+"\n"), 0o600))
	// Answers by address; echoes its secret on failure (redacted).
	sh := script(t, `q=$(cat); printf '%s\n' "$q" >> "$QUERIES"
case "$q" in
*'"x.ok"'*) printf '{"actor":"alice@example.com","time":"2026-11-29T10:00:00Z","source":"audit","event_id":"e1","url":"https://audit.example.com/e1"}' ;;
*'"x.garbage"'*) printf 'not json' ;;
*'"x.hang"'*) sleep 30 ;;
*) echo "denied with $TOKEN" >&2; exit 3 ;;
esac
`)
	plan := &planparse.Plan{}
	var changes []planparse.Change
	for _, a := range []string{"x.ok", "x.garbage", "x.hang", "x.fail"} {
		c := planparse.Change{Address: a, Mode: "managed", Type: "x", Actions: []string{"update"}, Attributes: []string{"v"},
			Provider: "registry.terraform.io/hashicorp/x", IDs: map[string]string{"id": "id-" + a}}
		plan.Drift = append(plan.Drift, c)
		changes = append(changes, c)
	}
	plan.Changes = changes
	r := &fakeRunner{results: map[string]runner.Result{"ws": {Plan: plan}}}
	var logs bytes.Buffer
	a := &Auditor{Runner: r, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	tg := target("ws")
	tg.Attribution = &config.AttributionCommand{Argv: []string{sh}, Env: map[string]string{"QUERIES": queries},
		SecretEnvFiles: map[string]string{"TOKEN": secret}, Timeout: 2 * time.Second}
	from := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	tg.Prior = &Prior{CheckedAt: from}
	start := time.Now()
	res := a.Check(t.Context(), tg)
	require.Less(t, time.Since(start), 10*time.Second, "a hanging command is killed at its timeout")
	require.Equal(t, drift.StatusDrift, res.Status, "failures never fail the run")

	byAddr := map[string]drift.Finding{}
	for _, f := range res.Findings {
		byAddr[f.Address] = f
	}
	ok := byAddr["x.ok"]
	require.Equal(t, &drift.Attribution{Actor: "alice@example.com", Time: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		Source: "audit", EventID: "e1", URL: "https://audit.example.com/e1"}, ok.Attribution)
	require.Empty(t, ok.AttributionError)
	require.Equal(t, from, ok.Window.From)
	for _, addr := range []string{"x.garbage", "x.hang", "x.fail"} {
		f := byAddr[addr]
		require.Nil(t, f.Attribution, addr)
		require.True(t, strings.HasPrefix(f.AttributionError, "attribution failed: "), "%s: %q", addr, f.AttributionError)
	}
	require.Contains(t, byAddr["x.hang"].AttributionError, "timed out")
	require.Contains(t, byAddr["x.fail"].AttributionError, "[REDACTED]")
	out, err := json.Marshal(res)
	require.NoError(t, err)
	require.NotContains(t, string(out)+logs.String(), canary)
	require.Contains(t, logs.String(), "attribution failed")

	// The query: workspace, address, type, provider, ids and the window.
	b, err := os.ReadFile(queries)
	require.NoError(t, err)
	var q map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m["address"] == "x.ok" {
			q = m
		}
	}
	require.Equal(t, "ws", q["workspace"])
	require.Equal(t, "x", q["type"])
	require.Equal(t, "registry.terraform.io/hashicorp/x", q["provider"])
	require.Equal(t, map[string]any{"id": "id-x.ok"}, q["ids"])
	require.Equal(t, from.Format(time.RFC3339), q["window"].(map[string]any)["from"])

	// Seen again: kept, not asked again.
	require.NoError(t, os.Remove(queries))
	tg.Prior = &Prior{Findings: res.Findings, CheckedAt: time.Now()}
	again := a.Check(t.Context(), tg)
	require.Equal(t, res.Findings, again.Findings)
	require.NoFileExists(t, queries)
}

func TestAttributeBounded(t *testing.T) {
	dir := t.TempDir()
	var fs []drift.Finding
	var fresh []int
	for i := range MaxAttributions + 5 {
		fs = append(fs, drift.Finding{Kind: drift.KindDrift, Address: fmt.Sprintf("x.r%d", i), Window: &drift.Window{}})
		fresh = append(fresh, i)
	}
	// Two at a time: a script that records its calls and refuses to run
	// beside more than one other.
	sh := script(t, `cat >/dev/null; n=$(ls "$DIR" | grep -c '^run-'); [ "$n" -lt 2 ] || { echo "too many at once" >&2; exit 1; }
f=$(mktemp "$DIR/run-XXXXXX"); echo x >> "$DIR/calls"; sleep 0.1; rm -f "$f"; echo '{"actor":"a"}'
`)
	tg := target("ws")
	tg.Attribution = &config.AttributionCommand{Argv: []string{sh}, Env: map[string]string{"DIR": dir}, Timeout: 5 * time.Second}
	attribute(t.Context(), slog.New(slog.DiscardHandler), tg, nil, fs, fresh, time.Now())
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	require.NoError(t, err)
	require.Equal(t, MaxAttributions, strings.Count(string(b), "x"))
	for i, f := range fs {
		if i < MaxAttributions {
			require.Equal(t, "a", f.Attribution.Actor, "%d: %s", i, f.AttributionError)
		} else {
			require.Nil(t, f.Attribution)
			require.Contains(t, f.AttributionError, "attribution skipped")
		}
	}
}

func TestAttributeSecretUnreadable(t *testing.T) {
	fs := []drift.Finding{{Kind: drift.KindDrift, Address: "x.a", Window: &drift.Window{}}}
	tg := target("ws")
	tg.Attribution = &config.AttributionCommand{Argv: []string{"true"}, SecretEnvFiles: map[string]string{"T": "/nonexistent/secret"}}
	attribute(t.Context(), slog.New(slog.DiscardHandler), tg, nil, fs, []int{0}, time.Now())
	require.Equal(t, "attribution failed: secret_env_files.T: cannot read its file", fs[0].AttributionError)
}
