package planparse

import "testing"

// plainPrefix agrees with a byte-by-byte scan for every stop byte at every
// position of a word.
func TestPlainPrefix(t *testing.T) {
	for _, stop := range []byte{'"', '\\', 0x00, 0x1f, 0x0a} {
		for n := 0; n < 40; n++ {
			for pos := 0; pos <= n; pos++ {
				b := make([]byte, n)
				for i := range b {
					b[i] = "aZ \x7f\x80\xff!#[]{}"[i%12]
				}
				want := n
				if pos < n {
					b[pos] = stop
					want = pos
				}
				if got := plainPrefix(b); got != want {
					t.Fatalf("plainPrefix(%q) = %d, want %d", b, got, want)
				}
			}
		}
	}
}
