package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The status page says which workspaces' notifications are held and
// until when, in a summary and on each held workspace's row.
func TestStatusPageHeld(t *testing.T) {
	_, base := serveSilences(t)
	code, _, body := get(t, base+"/")
	require.Equal(t, http.StatusOK, code, body)
	i := strings.Index(body, `<section class="remsum held" id="held">`)
	require.Positive(t, i, withoutStyle(body))
	held := body[i : i+strings.Index(body[i:], "</section>")]
	require.Contains(t, held, `2 workspaces: checks go on`)
	require.Contains(t, held, `<a href="/workspaces/prod-k8s">prod-k8s</a> <span class="muted">(sent again <time datetime="2026-03-14T04:00:00Z" title="2026-03-14 04:00:00 UTC">in 1h</time>)</span>, `+
		`<a href="/workspaces/prod-network">prod-network</a> <span class="muted">(sent again <time datetime="2026-03-14T06:00:00Z" title="2026-03-14 06:00:00 UTC">in 3h</time>)</span>`)
	require.Contains(t, held, `<a href="/silences">Silences and windows</a>`)
	require.Contains(t, rowOf(t, body, "ws-prod-network"), `notifications held, sent again <time datetime="2026-03-14T06:00:00Z"`)
	require.NotContains(t, rowOf(t, body, "ws-staging-web"), "held")

	// Nothing held: no section.
	h := newHarness(t)
	_, _, body = get(t, serve(t, h.options()).URL+"/")
	require.NotContains(t, body, `id="held"`)

	// A daemon whose silences cannot be read: an error page, no detail.
	h.setSilenceErr(errors.New("sqlite: database is locked"))
	code, _, body = get(t, serve(t, h.options()).URL+"/")
	require.Equal(t, http.StatusInternalServerError, code)
	require.NotContains(t, body, "sqlite")
}

// The workspace page says when a workspace's notifications are held:
// until when, by whom and why; or when they will be.
func TestWorkspacePageHold(t *testing.T) {
	_, base := serveSilences(t)
	_, _, body := get(t, base+"/workspaces/prod-network")
	require.Contains(t, body, `<div class="note held" id="hold"><strong>Notifications held</strong> until `+
		`<time datetime="2026-03-14T06:00:00Z">2026-03-14 06:00:00 UTC</time>, in 3h `+
		`(silence by alice: DB migration, CHG-1234; maintenance window weekly-patching).`)

	_, _, body = get(t, base+"/workspaces/staging-web")
	require.Contains(t, body, `<div class="note held" id="hold">Notifications will be held from `+
		`<time datetime="2026-03-14T05:00:00Z">2026-03-14 05:00:00 UTC</time>, in 2h, until `+
		`<time datetime="2026-03-14T09:00:00Z">2026-03-14 09:00:00 UTC</time>, in 6h (silence by bob: load test &lt;script&gt;).`)

	_, _, body = get(t, base+"/workspaces/billing-db")
	require.NotContains(t, body, `id="hold"`)

	// Without silences, no note.
	h := newHarness(t)
	o := h.options()
	o.Control = struct{ Control }{h}
	code, _, body := get(t, serve(t, o).URL+"/workspaces/prod-network")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, `id="hold"`)
}
