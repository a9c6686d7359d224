package notify

import (
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
