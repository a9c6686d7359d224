package netcfg

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseHostPort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint16
		err  string
	}{
		{in: "127.0.0.1:6443", want: 6443},
		{in: "localhost:5432", want: 5432},
		{in: "[::1]:8200", want: 8200},
		{in: "127.0.0.2:80", want: 80},
		{in: "10.0.0.5:5432", err: "only the host's loopback ports"},
		{in: "example.com:443", err: "only the host's loopback ports"},
		{in: "6443", err: "want HOST:PORT"},
		{in: "127.0.0.1:0", err: "port must be 1-65535"},
		{in: "127.0.0.1:70000", err: "port must be 1-65535"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseHostPort(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
