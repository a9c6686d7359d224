package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBearer(t *testing.T) {
	tests := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"Bearer  abc ", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic abc", "", false},
		{"", "", false},
		{"abc", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			got, ok := bearer(tt.header)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, string(got))
		})
	}
}
