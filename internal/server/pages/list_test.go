package pages

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPagerNumbers(t *testing.T) {
	tests := []struct {
		cur, pages int
		want       []int
	}{
		{1, 2, []int{1, 2}},
		{1, 5, []int{1, 2, 3, 4, 5}},
		{1, 20, []int{1, 2, 3, 0, 20}},
		{10, 20, []int{1, 0, 8, 9, 10, 11, 12, 0, 20}},
		{20, 20, []int{1, 0, 18, 19, 20}},
		{4, 7, []int{1, 2, 3, 4, 5, 6, 7}},
		{30, 20, []int{1, 0, 20}},                // past the end: the first and the last
		{5, 9, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}}, // a gap of one page is that page
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, pagerNumbers(tt.cur, tt.pages), "page %d of %d", tt.cur, tt.pages)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 51000: "51,000", 1234567: "1,234,567", -1000: "-1,000"} {
		require.Equal(t, want, thousands(n))
	}
}
