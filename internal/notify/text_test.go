package notify

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTruncate(t *testing.T) {
	require.Equal(t, "abc", Truncate("abc", 3))
	require.Equal(t, "ab…", Truncate("abcd", 3))
	require.Equal(t, "éé…", Truncate("éééé", 3))
	require.Empty(t, Truncate("abc", 0))
}

func TestOneLine(t *testing.T) {
	require.Equal(t, "a b c", OneLine("  a\n\tb  \r\n c\n"))
	require.Empty(t, OneLine(" \n "))
}
