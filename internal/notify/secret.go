package notify

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// ReadSecretFile reads the one-line secret (a key, a token, a URL) in the
// file at path, the value of config key key: trimmed of the white space
// around it, refused when empty or when ok (if not nil) refuses it, with
// want saying what is expected. Errors name the key and the file, never
// the content: "KEY: open PATH: …", "KEY "PATH" is empty",
// "KEY "PATH": WANT".
func ReadSecretFile(key, path, want string, ok func(string) bool) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		// The *PathError names the file, not its content.
		return "", fmt.Errorf("%s: %w", key, err)
	}
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "":
		return "", fmt.Errorf("%s %q is empty", key, path)
	case ok != nil && !ok(s):
		return "", fmt.Errorf("%s %q: %s", key, path, want)
	}
	return s, nil
}

// Redact replaces every non-empty secret in s with [REDACTED].
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}

// CleanText is s redacted by redact, on one line and cut to limit:
// redacted before the cut, so no part of a secret survives it.
func CleanText(s string, limit int, redact func(string) string) string {
	return Truncate(OneLine(redact(s)), limit)
}

// TransportError describes a failed HTTP attempt without the URL a
// *url.Error quotes (it may hold a secret): "timeout after TIMEOUT" for a
// deadline, else the error redacted by redact.
func TransportError(err error, timeout time.Duration, redact func(string) string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout after " + timeout.String()
	}
	return redact(err.Error())
}
