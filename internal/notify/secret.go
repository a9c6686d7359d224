package notify

import (
	"fmt"
	"os"
	"strings"
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
