package backend

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600))
	}
	write("backend.hcl", `
# the lock endpoint
password     = "CANARY-hcl-password"
lock_address = "http://lockuser:CANARY-hcl-lockpw@127.0.0.1:1/lock?sig=CANARY-hcl-signature"
retry_max    = 2
skip_cert_verification = true
assume_role {
  role_arn = "CANARY-hcl-nested"
}
`)
	write("backend.json", `{"access_key": "CANARY-json-key", "encrypt": true}`)
	write("broken.hcl", "token = \"CANARY-broken-quoted\" # a comment\nsecret_key: CANARY-broken-bare\nconn_str = \"postgres://u:CANARY-broken-pw@db/x\n")

	for name, tc := range map[string]struct {
		entries []string
		noFiles bool
		want    []string
		wantNot []string
	}{
		"key=value": {
			entries: []string{"address=http://127.0.0.1:1/state?token=CANARY-inline-token", "username= CANARY-inline-user "},
			want: []string{
				"address=http://127.0.0.1:1/state?token=CANARY-inline-token",
				"http://127.0.0.1:1/state?token=CANARY-inline-token",
				"token=CANARY-inline-token", "CANARY-inline-token",
				"username= CANARY-inline-user ", "CANARY-inline-user",
			},
		},
		"url user info": {
			entries: []string{"conn_str=postgres://dwuser:CANARY-url-pw@db.example:5432/state"},
			want:    []string{"dwuser", "CANARY-url-pw"},
		},
		"booleans and numbers: only the whole entry": {
			entries: []string{"encrypt=true", "retry_max=5", "skip=false"},
			want:    []string{"encrypt=true", "retry_max=5", "skip=false"},
			wantNot: []string{"true", "5", "false"},
		},
		"hcl file": {
			entries: []string{"backend.hcl"},
			want: []string{"CANARY-hcl-password", "CANARY-hcl-nested", "lockuser", "CANARY-hcl-lockpw", "CANARY-hcl-signature",
				"http://lockuser:CANARY-hcl-lockpw@127.0.0.1:1/lock?sig=CANARY-hcl-signature"},
			wantNot: []string{"2", "true", "backend.hcl"},
		},
		"json file": {
			entries: []string{filepath.Join(dir, "backend.json")},
			want:    []string{"CANARY-json-key"},
			wantNot: []string{"true"},
		},
		"unparsable file, line by line": {
			entries: []string{"broken.hcl"},
			want:    []string{"CANARY-broken-quoted", "CANARY-broken-bare", "postgres://u:CANARY-broken-pw@db/x", "CANARY-broken-pw"},
		},
		"missing file": {entries: []string{"nope.hcl"}},
		"files not read without a reader": {
			entries: []string{"backend.hcl", "k=CANARY-inline-only"},
			noFiles: true,
			want:    []string{"k=CANARY-inline-only", "CANARY-inline-only"},
			wantNot: []string{"CANARY-hcl-password"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			read := ConfigFileReader(t.Context(), dir, dir)
			if tc.noFiles {
				read = nil
			}
			got := ConfigSecrets(tc.entries, read)
			for _, w := range tc.want {
				require.Contains(t, got, w)
			}
			for _, w := range tc.wantNot {
				require.NotContains(t, got, w)
			}
			if len(tc.want) == 0 {
				require.Empty(t, got)
			}
		})
	}
}

// A relative file entry is read only with a module directory; a file
// outside the source tree (the operator's) is read too.
func TestConfigFileReader(t *testing.T) {
	src, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "b.hcl"), []byte(`token = "CANARY-in-source"`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "b.hcl"), []byte(`token = "CANARY-operator"`), 0o600))

	got := ConfigSecrets([]string{"b.hcl", filepath.Join(outside, "b.hcl")}, ConfigFileReader(t.Context(), src, src))
	require.Equal(t, []string{"CANARY-in-source", "CANARY-operator"}, got)

	got = ConfigSecrets([]string{"b.hcl", filepath.Join(outside, "b.hcl")}, ConfigFileReader(t.Context(), "", ""))
	require.Equal(t, []string{"CANARY-operator"}, got)

	// A named pipe is refused, never a hang.
	fifo := filepath.Join(src, "fifo.hcl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, err := ConfigFileReader(t.Context(), src, src)("fifo.hcl")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "fifo.hcl", "the entry is not echoed")
}
