package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// Secret is the one-line secret a notifier reads at New: the file at
// Path, the value of config key Key, checked by OK (nil: any) with Want
// saying what is expected (ReadSecretFile).
type Secret struct {
	Key, Path, Want string
	OK              func(string) bool
}

// Open begins a notifier's New: a logger is required, validate (its
// Config's Validate) must pass, and the secret is read, when one is
// named. Errors read `VENDOR "NAME": …` and never hold the secret.
func Open(vendor, name string, logger *slog.Logger, validate func() error, s Secret) (string, error) {
	if logger == nil {
		return "", fmt.Errorf("%s: logger is required", vendor)
	}
	if err := validate(); err != nil {
		return "", fmt.Errorf("%s %q: %w", vendor, name, err)
	}
	if s.Key == "" {
		return "", nil
	}
	v, err := ReadSecretFile(s.Key, s.Path, s.Want, s.OK)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", vendor, name, err)
	}
	return v, nil
}
