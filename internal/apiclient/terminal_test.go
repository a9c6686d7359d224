package apiclient

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrintable(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"plain":                {"Plan: 1 to add, 0 to change.\n", "Plan: 1 to add, 0 to change.\n"},
		"tab and newline kept": {"a\tb\nc\n", "a\tb\nc\n"},
		"utf-8 kept":           {"│ Error: bad — ünïcode ✓\n", "│ Error: bad — ünïcode ✓\n"},
		"sgr colour":           {"\x1b[31mError:\x1b[0m bad", "Error: bad"},
		"csi with params":      {"x\x1b[2J\x1b[1;1Hy", "xy"},
		"csi private":          {"\x1b[?25lhidden cursor", "hidden cursor"},
		"osc title, bel":       {"\x1b]0;pwned\x07ok", "ok"},
		"osc hyperlink, st":    {"\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		"dcs":                  {"a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		"two-char escape":      {"a\x1bcb", "ab"},
		"charset escape":       {"a\x1b(Bb", "ab"},
		"lone esc at end":      {"abc\x1b", "abc"},
		"unterminated csi":     {"abc\x1b[12", "abc"},
		"unterminated osc":     {"abc\x1b]0;title", "abc"},
		"carriage return":      {"innocent\rmalicious\n", "innocentmalicious\n"},
		"backspace and bell":   {"a\bb\x07c", "abc"},
		"nul and del":          {"a\x00b\x7fc", "abc"},
		"c1 csi as utf-8":      {"a\u009b31mb", "a31mb"},
		"c1 range":             {"a\u0080\u0085\u009fb", "ab"},
		"invalid utf-8 byte":   {"a\x9b31mb", "a\ufffd31mb"},
		"check error_message":  {"Error: Check failed: \x1b]0;x\x07\x1b[8mhidden\x1b[0m", "Error: Check failed: hidden"},
	} {
		t.Run(name, func(t *testing.T) {
			got := Printable(tc.in)
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "\x1b")
		})
	}
}

// A plain-text log and an event stream are written line by line, each
// Printable; lines split across reads still lose their sequences.
func TestCopyPrintable(t *testing.T) {
	log := "== plan ==\n\x1b[31mError:\x1b[0m \x1b]0;t\x07bad\r\n" + strings.Repeat("x", 70<<10) + "\x1b[1m\nlast"
	want := "== plan ==\nError: bad\n" + strings.Repeat("x", 70<<10) + "\nlast"
	var out bytes.Buffer
	l := &Log{body: nopCloser{strings.NewReader(log)}}
	_, err := l.Copy(&out)
	require.NoError(t, err)
	require.Equal(t, want, out.String())

	out.Reset()
	stream := "data: \x1b[31mred\x1b[0m\n\ndata: a\x1b]0;t\x07b\ndata: \x1b[2Jc\n\nevent: end\ndata: {\"status\":\"clean\"}\n\n"
	l = &Log{Events: true, body: nopCloser{strings.NewReader(stream)}}
	verdict, err := l.Copy(&out)
	require.NoError(t, err)
	require.Equal(t, StatusClean, verdict)
	require.Equal(t, "red\nab\nc\n", out.String())
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
