package redact

import (
	"regexp"
	"strings"
)

// Marker replaces what is removed.
const Marker = "[REDACTED]"

// urlPattern is a URL in free text: a scheme, "://", then everything up
// to a space, a quote or an angle bracket (how logs, Go's url.Error and
// HCL diagnostics delimit them).
var urlPattern = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'`<>]+")

// trailing is punctuation that ends a sentence rather than the URL; it is
// kept when the query string it would belong to is removed.
var trailing = regexp.MustCompile(`[.,;:)\]}]+$`)

// URLs returns text with the user info and the query string (and
// fragment) of every URL in it replaced by Marker:
//
//	Get "http://u:p@host:1/state?token=x": refused
//	Get "http://[REDACTED]@host:1/state?[REDACTED]": refused
//
// Scheme, host, port and path stay: they tell which endpoint failed.
func URLs(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlPattern.ReplaceAllStringFunc(text, URL)
}

// URL is one URL with its user info and query string replaced by Marker;
// see URLs.
func URL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	// The authority ends at the first '/', '?' or '#'; its user info at
	// its last '@' (a password may hold '@' unescaped).
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		rest = Marker + rest[at:]
		end += len(Marker) - at
	}
	if q := strings.IndexAny(rest[end:], "?#"); q >= 0 {
		q += end
		tail := trailing.FindString(rest[q+1:])
		if rest[q+1:] != "" {
			rest = rest[:q+1] + Marker + tail
		}
	}
	return scheme + "://" + rest
}
