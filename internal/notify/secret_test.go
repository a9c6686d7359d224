package notify

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ReadSecretFile trims the secret and refuses an empty or malformed one,
// naming the key and the file, never the content.
func TestReadSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	oneWord := func(s string) bool { return !strings.ContainsAny(s, " \t") }

	got, err := ReadSecretFile("token_file", write("ok", "\n  SECRET-canary-1  \n"), "one word", oneWord)
	require.NoError(t, err)
	require.Equal(t, "SECRET-canary-1", got)

	empty := write("empty", " \n")
	_, err = ReadSecretFile("token_file", empty, "one word", oneWord)
	require.EqualError(t, err, `token_file "`+empty+`" is empty`)

	bad := write("bad", "SECRET canary-2\n")
	_, err = ReadSecretFile("token_file", bad, "one word", oneWord)
	require.EqualError(t, err, `token_file "`+bad+`": one word`)
	require.NotContains(t, err.Error(), "canary-2")

	_, err = ReadSecretFile("token_file", filepath.Join(dir, "missing"), "one word", nil)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.True(t, strings.HasPrefix(err.Error(), "token_file: open "), err.Error())
}

// Open refuses a nil logger and a config its Validate refuses, and reads
// the secret, each error naming the notifier and never the secret.
func TestOpen(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	ok := func() error { return nil }
	file := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(file, []byte("SECRET-canary-3 \n"), 0o600))

	_, err := Open("jsm", "pager", nil, ok, Secret{})
	require.EqualError(t, err, "jsm: logger is required")
	_, err = Open("jsm", "pager", log, func() error { return errors.New("api_key_file: required") }, Secret{})
	require.EqualError(t, err, `jsm "pager": api_key_file: required`)

	v, err := Open("jsm", "pager", log, ok, Secret{})
	require.NoError(t, err)
	require.Empty(t, v, "no secret named, none read")
	v, err = Open("jsm", "pager", log, ok, Secret{Key: "api_key_file", Path: file})
	require.NoError(t, err)
	require.Equal(t, "SECRET-canary-3", v)
	_, err = Open("jsm", "pager", log, ok, Secret{Key: "api_key_file", Path: file, Want: "digits only",
		OK: func(s string) bool { return strings.Trim(s, "0123456789") == "" }})
	require.EqualError(t, err, `jsm "pager": api_key_file "`+file+`": digits only`)
}
