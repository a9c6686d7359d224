package notifycfg

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// collect is a Check that records "key: message" lines.
func collect() (Check, *[]string) {
	var got []string
	return Check{
		File: func(key, p string) string { return "/abs/" + p },
		Add:  func(key, format string, args ...any) { got = append(got, key+": "+fmt.Sprintf(format, args...)) },
	}, &got
}

// URL accepts an http(s) URL without credentials; SecureURL also wants
// https unless the host is a loopback address.
func TestURLRules(t *testing.T) {
	for raw, want := range map[string]string{
		"":                            "",
		"https://api.example.com/x":   "",
		"http://127.0.0.1:8080":       "",
		"http://[::1]:8080":           "",
		"http://localhost/api":        "",
		"api.example.com":             "u: not an http(s) URL",
		"ftp://api.example.com":       "u: not an http(s) URL",
		"https://u:p@api.example.com": "u: credentials in the URL are not allowed",
		"http://api.example.com":      "u: must be https: the key travels in a header (http only to a loopback address)",
	} {
		v, got := collect()
		v.SecureURL("u", raw, "key travels in a header")
		require.Equal(t, want, strings.Join(*got, "\n"), raw)
	}
	v, got := collect()
	require.NotNil(t, v.URL("u", "http://api.example.com"))
	require.Empty(t, *got, "plain URL: http is fine")
}

// Validate reports the name, the block's mistakes (a file only required)
// and a negative timeout, each as "key: message".
func TestValidate(t *testing.T) {
	block := func(v Check) {
		require.Equal(t, "tok", v.File("token_file", "tok"), "Validate's File does not resolve paths")
		v.File("token_file", " ")
		v.Add("labels[0]", "empty label")
	}
	require.EqualError(t, Validate("", -time.Second, block),
		"name: required\ntoken_file: required\nlabels[0]: empty label\ntimeout: -1s: must not be negative")
	require.NoError(t, Validate("pager", 0, func(Check) {}))
}

// Each reports an item's mistake at key[i], told whether an earlier
// item was the same; a message with a % in it stays as it is.
func TestEach(t *testing.T) {
	v, got := collect()
	v.Each("labels", []string{"ok", "", "ok", "100%"}, func(l string, dup bool) string {
		switch {
		case l == "":
			return "empty"
		case dup:
			return fmt.Sprintf("%q: duplicate", l)
		case strings.Contains(l, "%"):
			return l + " is not allowed"
		}
		return ""
	})
	require.Equal(t, []string{`labels[1]: empty`, `labels[2]: "ok": duplicate`, `labels[3]: 100% is not allowed`}, *got)
}
