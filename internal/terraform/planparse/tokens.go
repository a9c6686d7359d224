package planparse

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// literal consumes the rest of true/false/null after its first byte.
func (s *scanner) literal(first byte) error {
	var rest string
	switch first {
	case 't':
		rest = "true"[1:]
	case 'f':
		rest = "false"[1:]
	case 'n':
		rest = "null"[1:]
	}
	for i := 0; i < len(rest); i++ {
		if s.pos >= s.end && !s.more() {
			return s.eofError()
		}
		if s.buf[s.pos] != rest[i] {
			return s.errorf("%s in literal %c%s", describe(s.buf[s.pos]), first, rest)
		}
		s.pos++
	}
	return nil
}

// peekByte returns the byte at pos without skipping white space.
func (s *scanner) peekByte() (byte, bool) {
	if s.pos >= s.end && !s.more() {
		return 0, false
	}
	return s.buf[s.pos], true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number consumes a number whose first byte ('-' or a digit) is already
// consumed.
func (s *scanner) number(first byte) error {
	c := first
	if c == '-' {
		var ok bool
		if c, ok = s.peekByte(); !ok {
			return s.eofError()
		}
		if !isDigit(c) {
			return s.errorf("%s in number", describe(c))
		}
		s.pos++
	}
	if c != '0' {
		s.digits()
	}
	if c, ok := s.peekByte(); ok && c == '.' {
		s.pos++
		if c, ok = s.peekByte(); !ok {
			return s.eofError()
		} else if !isDigit(c) {
			return s.errorf("%s after decimal point in number", describe(c))
		}
		s.digits()
	}
	if c, ok := s.peekByte(); ok && (c == 'e' || c == 'E') {
		s.pos++
		if c, ok = s.peekByte(); ok && (c == '+' || c == '-') {
			s.pos++
		}
		if c, ok = s.peekByte(); !ok {
			return s.eofError()
		} else if !isDigit(c) {
			return s.errorf("%s in exponent of number", describe(c))
		}
		s.digits()
	}
	return nil
}

func (s *scanner) digits() {
	for {
		c, ok := s.peekByte()
		if !ok || !isDigit(c) {
			return
		}
		s.pos++
	}
}

// strAttn marks the bytes a string scan must stop at.
var strAttn = func() (t [256]bool) {
	for i := 0; i < 0x20; i++ {
		t[i] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// plainPrefix returns the length of the longest prefix of b without a
// quote, a backslash or a control character. Eight bytes at a time (SWAR):
// strings are most of a plan's bytes.
func plainPrefix(b []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (ones * '"')
		bs := x ^ (ones * '\\')
		// The lowest flagged byte is exact (borrows only run upwards
		// from a real match), so it is the first byte to stop at.
		if m := ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && !strAttn[b[i]] {
		i++
	}
	return i
}

// string consumes a string whose opening quote is already consumed. When
// out is non-nil the decoded content is appended to *out.
func (s *scanner) string(out *[]byte) error {
	for {
		b := s.buf[s.pos:s.end]
		i := plainPrefix(b)
		if out != nil {
			*out = append(*out, b[:i]...)
		}
		s.pos += i
		if i == len(b) {
			if !s.more() {
				return s.eofError()
			}
			continue
		}
		switch c := b[i]; c {
		case '"':
			s.pos++
			return nil
		case '\\':
			s.pos++
			if err := s.escape(out); err != nil {
				return err
			}
		default:
			return s.errorf("%s in string literal", describe(c))
		}
	}
}

// escape consumes an escape sequence after its backslash.
func (s *scanner) escape(out *[]byte) error {
	c, ok := s.peekByte()
	if !ok {
		return s.eofError()
	}
	s.pos++
	var r rune
	switch c {
	case '"', '\\', '/':
		r = rune(c)
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		v, err := s.hex4()
		if err != nil {
			return err
		}
		r = v
		if out != nil && utf16.IsSurrogate(r) {
			// A surrogate pair spans two escapes; like encoding/json,
			// a lone or invalid surrogate decodes to U+FFFD.
			if !s.ensure(2) || s.buf[s.pos] != '\\' || s.buf[s.pos+1] != 'u' {
				r = utf8.RuneError
				break
			}
			s.pos += 2
			v2, err := s.hex4()
			if err != nil {
				return err
			}
			if dec := utf16.DecodeRune(r, v2); dec != utf8.RuneError {
				r = dec
				break
			}
			*out = utf8.AppendRune(*out, utf8.RuneError)
			r = v2
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError
			}
		}
	default:
		s.pos--
		return s.errorf("%s in string escape code", describe(c))
	}
	if out != nil {
		*out = utf8.AppendRune(*out, r)
	}
	return nil
}

// ensure tries to make n bytes available after pos.
func (s *scanner) ensure(n int) bool {
	for s.end-s.pos < n {
		if !s.more() {
			return false
		}
	}
	return true
}

func (s *scanner) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, ok := s.peekByte()
		if !ok {
			return 0, s.eofError()
		}
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, s.errorf("%s in \\u hexadecimal character escape", describe(c))
		}
		r = r<<4 | rune(c)
		s.pos++
	}
	return r, nil
}
