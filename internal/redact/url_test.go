package redact

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURLs(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"no url":                     {"plain text, no secret", "plain text, no secret"},
		"clean url":                  {"GET https://example.com/a/b failed", "GET https://example.com/a/b failed"},
		"query string":               {`Get "http://127.0.0.1:1/state?token=CANARY": dial tcp`, `Get "http://127.0.0.1:1/state?[REDACTED]": dial tcp`},
		"user info":                  {"clone https://user:CANARY@git.example.com/r.git: denied", "clone https://[REDACTED]@git.example.com/r.git: denied"},
		"token as user":              {"https://CANARY@github.com/o/r", "https://[REDACTED]@github.com/o/r"},
		"both":                       {"http://u:CANARY@h/p?k=CANARY&x=1#f", "http://[REDACTED]@h/p?[REDACTED]"},
		"at in password":             {"https://u:CA@NARY@h/p", "https://[REDACTED]@h/p"},
		"at in query, not user info": {"https://h/p?mail=a@b.c", "https://h/p?[REDACTED]"},
		"no path":                    {"http://u:p@h:8080", "http://[REDACTED]@h:8080"},
		"query without path":         {"http://h?token=CANARY", "http://h?[REDACTED]"},
		"fragment":                   {"https://h/cb#access_token=CANARY", "https://h/cb#[REDACTED]"},
		"sentence end":               {"see https://h/p?token=CANARY.", "see https://h/p?[REDACTED]."},
		"parenthesised":              {"(at http://h/p?token=CANARY)", "(at http://h/p?[REDACTED])"},
		"two urls":                   {"a http://h/?t=CANARY1 b s3://u:CANARY2@bucket/k", "a http://h/?[REDACTED] b s3://[REDACTED]@bucket/k"},
		"single quoted":              {"url 'https://h/x?sig=CANARY' bad", "url 'https://h/x?[REDACTED]' bad"},
		"empty query":                {"http://h/p?", "http://h/p?"},
		"git scp form untouched":     {"git@github.com:o/r.git", "git@github.com:o/r.git"},
	} {
		t.Run(name, func(t *testing.T) {
			got := URLs(tc.in)
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "CANARY")
		})
	}
}
