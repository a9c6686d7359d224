package notify

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

func TestTruncate(t *testing.T) {
	require.Equal(t, "abc", Truncate("abc", 3))
	require.Equal(t, "ab…", Truncate("abcd", 3))
	require.Equal(t, "éé…", Truncate("éééé", 3))
	require.Empty(t, Truncate("abc", 0))
}

func TestOneLine(t *testing.T) {
	require.Equal(t, "a b c", OneLine("  a\n\tb  \r\n c\n"))
	require.Empty(t, OneLine(" \n "))
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Hour: "under a minute", 0: "under a minute", 20 * time.Second: "under a minute", 30 * time.Second: "1m",
		45 * time.Minute: "45m", 61 * time.Minute: "1h 1m", 3 * time.Hour: "3h", 50 * time.Hour: "2d 2h", 48 * time.Hour: "2d",
		48*time.Hour + 29*time.Minute: "2d", 59*time.Minute + 40*time.Second: "1h",
	} {
		require.Equal(t, want, Duration(d), "%s", d)
	}
}

func TestCountsText(t *testing.T) {
	require.Equal(t, "no findings", CountsText(drift.Counts{}))
	require.Equal(t, "3 drifted, 1 pending, 2 forbidden", CountsText(drift.Counts{Drift: 3, Pending: 1, Forbidden: 2}))
	require.Equal(t, "2 forbidden", CountsText(drift.Counts{Forbidden: 2}))
}

func TestCapped(t *testing.T) {
	up := strings.ToUpper
	require.Nil(t, Capped(nil, 2, "+%d more", up))
	require.Equal(t, []string{"A", "B"}, Capped([]string{"a", "b"}, 2, "+%d more", up))
	require.Equal(t, []string{"A", "B", "and 3 more"}, Capped([]string{"a", "b", "c", "d", "e"}, 2, "and %d more", up))
	require.Equal(t, []string{"1"}, Capped([]int{1}, 5, "+%d", strconv.Itoa))
}

func TestEventNoteAndWord(t *testing.T) {
	m := Message{Event: EventUpdate}
	bracket := func(s string) string { return "<" + s + ">" }
	require.Equal(t, " (findings changed)", EventNote(m, "S", bracket))
	require.Equal(t, "findings changed", EventWord(m, "R", bracket))
	m.Event = EventRenotify
	require.Equal(t, " (still open since S)", EventNote(m, "S", bracket))
	require.Equal(t, "R", EventWord(m, "R", bracket))
	m.Event, m.Remediation = EventRemediation, &Remediation{Result: "odd"}
	require.Equal(t, " (remediation <odd>)", EventNote(m, "S", bracket))
	require.Equal(t, "remediation <odd>", EventWord(m, "R", bracket))
	m.Event = EventOpen
	require.Empty(t, EventNote(m, "S", bracket))
	require.Equal(t, "opened", EventWord(m, "R", bracket))
	m.Event = EventResolve
	require.Empty(t, EventNote(m, "S", bracket))
	require.Equal(t, "resolved", EventWord(m, "R", bracket))
	m.Event = "snooze"
	require.Equal(t, "snooze", EventWord(m, "R", bracket))
}

func TestDeltaParts(t *testing.T) {
	a, r, c := []drift.Finding{{Address: "a"}}, []drift.Finding{{Address: "r"}}, []drift.Finding{{Address: "c"}}
	require.Equal(t, []DeltaPart{{"added", a}, {"removed", r}, {"changed", c}}, (&Delta{Added: a, Removed: r, Changed: c}).Parts())
}

// A code span's fence outruns every backtick run in it, and a span that
// starts or ends with a backtick is padded; a block's fence is at least
// three long.
func TestCodeSpanAndFence(t *testing.T) {
	require.Equal(t, "`aws_s3_bucket.logs`", CodeSpan("aws_s3_bucket.logs"))
	require.Equal(t, "``a`b``", CodeSpan("a`b"))
	require.Equal(t, "``` ``x ```", CodeSpan("``x"))
	require.Equal(t, "`` x` ``", CodeSpan("x`"))
	require.Equal(t, "```", Fence("plan output", 3))
	require.Equal(t, "`````", Fence("a ```` b ` c", 3))
}

// StableTitle names the class and workspace only; StatusText says open or
// resolved, for how long when known.
func TestStableTitleAndStatusText(t *testing.T) {
	require.Equal(t, "Drift checks failing for prod/network", StableTitle(ClassErrored, "prod/network"))
	require.Equal(t, "Forbidden resource types in prod/network", StableTitle(ClassForbidden, "prod/network"))
	require.Equal(t, "Terraform drift in prod/network", StableTitle(ClassDrift, "prod/network"))
	require.Equal(t, "Terraform drift in prod/network", StableTitle(ClassValidation, "prod/network"))

	open, resolve := Message{Event: EventOpen}, Message{Event: EventResolve}
	require.Equal(t, "Open", StatusText(open, ""))
	require.Equal(t, "Open for 2h", StatusText(open, "2h"))
	require.Equal(t, "Resolved", StatusText(resolve, ""))
	require.Equal(t, "Resolved after 1d 3h", StatusText(resolve, "1d 3h"))
}

func TestProvenance(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 4, 0, 0, time.FixedZone("CET", 3600))
	require.Equal(t, "changed by alice@example.com at 2026-11-29 09:04 UTC (cloudtrail)",
		Provenance(drift.Finding{Kind: drift.KindDrift, Attribution: &drift.Attribution{Actor: "alice@example.com", Time: at, Source: "cloudtrail"}}))
	require.Equal(t, "changed by bob", Provenance(drift.Finding{Attribution: &drift.Attribution{Actor: "bob"}}))
	require.Equal(t, "last changed in 0123456789ab by Ann",
		Provenance(drift.Finding{Kind: drift.KindPending, Commit: &drift.Commit{Hash: "0123456789abcdef0123456789abcdef01234567", Author: "Ann"}}))
	require.Empty(t, Provenance(drift.Finding{Kind: drift.KindDrift, AttributionError: "attribution failed: boom", Window: &drift.Window{To: at}}))
	require.Equal(t, "managed by a: dwtest_file.s and b: module.m.dwtest_file.s",
		Provenance(drift.Finding{Kind: drift.KindManagedTwice, ManagedBy: []string{"a: dwtest_file.s", "b: module.m.dwtest_file.s"}}))
	require.Equal(t, "in no workspace's state: /srv/hand", Provenance(drift.Finding{Kind: drift.KindUnmanaged, Detail: "/srv/hand"}))
	require.Equal(t, "Terraform drift in files: 2 unmanaged, 1 managed twice",
		Title(Incident{Class: ClassDrift, Workspace: "files", Counts: drift.Counts{Unmanaged: 2, ManagedTwice: 1}}))
	long := Provenance(drift.Finding{Attribution: &drift.Attribution{Actor: strings.Repeat("x", 256) + "\nnext"}})
	require.Len(t, []rune(long), 200)
	require.NotContains(t, long, "\n")
}
