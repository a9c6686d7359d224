package app

import (
	"io"
	"os"
	"strings"

	"github.com/driftwatch/driftwatch/internal/config"
)

// maxSecretFile bounds what is read of one secret file for redaction.
const maxSecretFile = 64 << 10

// knownSecrets reads every secret the config names (config.SecretFiles,
// config.SecretValues): each run's log and errors are redacted of all of
// them, not only of its own workspace's. A file that cannot be read is
// skipped: its owner (a notifier, a run) reports that itself.
func knownSecrets(cfg *config.Config) []string {
	out := cfg.SecretValues()
	for _, f := range cfg.SecretFiles() {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(fh, maxSecretFile))
		fh.Close()
		if v := strings.TrimSpace(string(b)); v != "" {
			out = append(out, v)
			// A git credentials file's "user:token": the token alone too.
			if _, tok, ok := strings.Cut(v, ":"); ok && !strings.Contains(v, "\n") {
				out = append(out, tok)
			}
		}
	}
	return out
}
