package planparse

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds JSON nesting, like encoding/json, so that neither the
// streaming parser nor the in-memory walkers can exhaust the stack.
const maxDepth = 10000

// bufSize is the initial read buffer. The buffer grows only while a single
// captured value (one resource_changes entry) does not fit.
const bufSize = 64 << 10

// scanner is a streaming, validating JSON lexer over an io.Reader. It keeps
// only a window of the input in memory: bytes before pos are discarded on
// refill unless a capture (mark >= 0) is active, in which case everything
// from mark on is kept so the captured value stays contiguous.
//
// It validates the JSON grammar exactly like encoding/json's scanner (which
// does not validate UTF-8 either), including inside values it skips.
type scanner struct {
	r        io.Reader
	buf      []byte
	pos, end int
	mark     int   // start of the active capture, or -1
	base     int64 // input offset of buf[0]
	eof      bool
	rerr     error  // read error other than io.EOF
	depth    int    // nesting of the structural parser (iterObject/iterArray)
	scratch  []byte // decoded strings, valid until the next read
	stack    []byte // skipValue's container stack
}

func newScanner(r io.Reader) *scanner {
	size := bufSize
	// Small in-memory documents (tests, fuzzing) need no 64 KiB buffer.
	if l, ok := r.(interface{ Len() int }); ok && l.Len() < size {
		size = max(l.Len()+1, 512)
	}
	return &scanner{r: r, buf: make([]byte, size), mark: -1}
}

// syntaxError reports a JSON grammar violation at an input offset.
type syntaxError struct {
	msg string
	off int64
}

func (e *syntaxError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

func (s *scanner) errorf(format string, args ...any) error {
	return &syntaxError{msg: fmt.Sprintf(format, args...), off: s.base + int64(s.pos)}
}

// eofError is returned when the input ends inside a value.
func (s *scanner) eofError() error {
	if s.rerr != nil {
		return fmt.Errorf("offset %d: read: %w", s.base+int64(s.pos), s.rerr)
	}
	return fmt.Errorf("offset %d: truncated input: %w", s.base+int64(s.pos), io.ErrUnexpectedEOF)
}

// more reads more input into the buffer. It returns false at the end of the
// input (or on a read error, kept in rerr).
func (s *scanner) more() bool {
	if s.eof {
		return false
	}
	keep := s.pos
	if s.mark >= 0 {
		keep = s.mark
	}
	if keep > 0 {
		n := copy(s.buf, s.buf[keep:s.end])
		s.base += int64(keep)
		s.pos -= keep
		s.end = n
		if s.mark >= 0 {
			s.mark -= keep
		}
	}
	if s.end == len(s.buf) {
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for range 100 {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.eof = true
			if !errors.Is(err, io.EOF) {
				s.rerr = err
			}
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	s.eof = true
	s.rerr = io.ErrNoProgress
	return false
}

// peek skips white space and returns the next byte without consuming it.
// ok is false at the end of the input.
func (s *scanner) peek() (byte, bool) {
	// Fast path, small enough to inline: Terraform writes compact JSON.
	if s.pos < s.end && s.buf[s.pos] > ' ' {
		return s.buf[s.pos], true
	}
	return s.peekSlow()
}

func (s *scanner) peekSlow() (byte, bool) {
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
				return c, true
			}
			s.pos++
		}
		if !s.more() {
			return 0, false
		}
	}
}

// next skips white space and consumes one byte, failing at the end of input.
func (s *scanner) next() (byte, error) {
	if s.pos < s.end && s.buf[s.pos] > ' ' {
		s.pos++
		return s.buf[s.pos-1], nil
	}
	c, ok := s.peekSlow()
	if !ok {
		return 0, s.eofError()
	}
	s.pos++
	return c, nil
}

func (s *scanner) expect(want byte) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != want {
		s.pos--
		return s.errorf("expected %q, found %s", want, describe(c))
	}
	return nil
}

// describe names the JSON value starting with c, for error messages.
func describe(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "number"
	}
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("invalid character %q", c)
	}
	return fmt.Sprintf("invalid byte 0x%02x", c)
}

// literal consumes the rest of true/false/null after its first byte.
func (s *scanner) literal(first byte) error {
	var rest string
	switch first {
	case 't':
		rest = "rue"
	case 'f':
		rest = "alse"
	case 'n':
		rest = "ull"
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

// skipValue validates and skips one JSON value (after optional white space).
// It is iterative, so deep nesting costs heap, not stack, and is bounded by
// maxDepth.
func (s *scanner) skipValue() error {
	stack := s.stack[:0]
	defer func() { s.stack = stack[:0] }()
	for {
		// A value is expected here. (The fast paths of next are written
		// out in this loop: the call is the hot spot.)
		var c byte
		if s.pos < s.end && s.buf[s.pos] > ' ' {
			c = s.buf[s.pos]
			s.pos++
		} else {
			var err error
			if c, err = s.next(); err != nil {
				return err
			}
		}
		switch c {
		case '{', '[':
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if s.depth+len(stack)+1 > maxDepth {
				return s.errorf("exceeded max nesting depth %d", maxDepth)
			}
			d, ok := s.peek()
			if !ok {
				return s.eofError()
			}
			if d == closer {
				s.pos++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if err := s.objectKey(); err != nil {
					return err
				}
			}
			continue
		case '"':
			if err := s.string(nil); err != nil {
				return err
			}
		case 't', 'f', 'n':
			if err := s.literal(c); err != nil {
				return err
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if err := s.number(c); err != nil {
				return err
			}
		default:
			s.pos--
			return s.errorf("%s looking for beginning of value", describe(c))
		}
		// After a complete value: close containers or move to the next
		// element.
		for {
			if len(stack) == 0 {
				return nil
			}
			if s.pos < s.end && s.buf[s.pos] > ' ' {
				c = s.buf[s.pos]
				s.pos++
			} else {
				var err error
				if c, err = s.next(); err != nil {
					return err
				}
			}
			top := stack[len(stack)-1]
			if c == ',' {
				if top == '{' {
					if err := s.objectKey(); err != nil {
						return err
					}
				}
				break
			}
			if (top == '{' && c == '}') || (top == '[' && c == ']') {
				stack = stack[:len(stack)-1]
				continue
			}
			s.pos--
			if top == '{' {
				return s.errorf("%s after object key:value pair", describe(c))
			}
			return s.errorf("%s after array element", describe(c))
		}
	}
}

// objectKey consumes `"key":` without decoding the key.
func (s *scanner) objectKey() error {
	if s.pos < s.end && s.buf[s.pos] == '"' {
		s.pos++
	} else if c, err := s.next(); err != nil {
		return err
	} else if c != '"' {
		s.pos--
		return s.errorf("%s looking for beginning of object key string", describe(c))
	}
	if err := s.string(nil); err != nil {
		return err
	}
	if s.pos < s.end && s.buf[s.pos] == ':' {
		s.pos++
		return nil
	}
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != ':' {
		s.pos--
		return s.errorf("%s after object key", describe(c))
	}
	return nil
}

// readString reads a string value and returns its decoded content, valid
// until the next call on s.
func (s *scanner) readString() ([]byte, error) {
	c, err := s.next()
	if err != nil {
		return nil, err
	}
	if c != '"' {
		s.pos--
		return nil, s.errorf("expected string, found %s", describe(c))
	}
	s.scratch = s.scratch[:0]
	if err := s.string(&s.scratch); err != nil {
		return nil, err
	}
	return s.scratch, nil
}

// readStringOrNull is readString that also accepts null (as "").
func (s *scanner) readStringOrNull() (string, error) {
	if c, ok := s.peek(); ok && c == 'n' {
		s.pos++
		return "", s.literal('n')
	}
	b, err := s.readString()
	return string(b), err
}

// readBool reads true, false or null (null reads as nil).
func (s *scanner) readBool() (*bool, error) {
	c, err := s.next()
	if err != nil {
		return nil, err
	}
	switch c {
	case 't', 'f':
		if err := s.literal(c); err != nil {
			return nil, err
		}
		v := c == 't'
		return &v, nil
	case 'n':
		return nil, s.literal(c)
	}
	s.pos--
	return nil, s.errorf("expected boolean, found %s", describe(c))
}

// container reads the opening delimiter of an object ('{') or array ('['),
// or a null in its place. It returns false for null and for an empty
// container, whose closing delimiter it also consumes.
func (s *scanner) container(open byte) (bool, error) {
	c, err := s.next()
	if err != nil {
		return false, err
	}
	if c == 'n' {
		return false, s.literal('n')
	}
	if c != open {
		s.pos--
		return false, s.errorf("expected %s, found %s", describe(open), describe(c))
	}
	if s.depth+1 > maxDepth {
		return false, s.errorf("exceeded max nesting depth %d", maxDepth)
	}
	closer := byte('}')
	if open == '[' {
		closer = ']'
	}
	d, ok := s.peek()
	if !ok {
		return false, s.eofError()
	}
	if d == closer {
		s.pos++
		return false, nil
	}
	return true, nil
}

// iterObject reads an object (or null), calling fn with each decoded key.
// fn must consume exactly one value. The key is valid only until fn's first
// call on s.
func (s *scanner) iterObject(fn func(key []byte) error) error {
	nonEmpty, err := s.container('{')
	if err != nil || !nonEmpty {
		return err
	}
	s.depth++
	defer func() { s.depth-- }()
	for {
		key, err := s.readString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		// fn's reads overwrite key; keep a copy for error locations.
		var kb [64]byte
		k := append(kb[:0], key...)
		if err := fn(key); err != nil {
			return atKey(k, err)
		}
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == '}' {
			return nil
		}
		if c != ',' {
			s.pos--
			return s.errorf("%s after object key:value pair", describe(c))
		}
	}
}

// iterArray reads an array (or null), calling fn for each element. fn must
// consume exactly one value.
func (s *scanner) iterArray(fn func(i int) error) error {
	nonEmpty, err := s.container('[')
	if err != nil || !nonEmpty {
		return err
	}
	s.depth++
	defer func() { s.depth-- }()
	for i := 0; ; i++ {
		if err := fn(i); err != nil {
			return atIndex(i, err)
		}
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == ']' {
			return nil
		}
		if c != ',' {
			s.pos--
			return s.errorf("%s after array element", describe(c))
		}
	}
}

// locError locates an error inside the document by a path of keys and
// indices, e.g. resource_changes[3].change.actions.
type locError struct {
	path string
	err  error
}

func (e *locError) Error() string { return e.path + ": " + e.err.Error() }
func (e *locError) Unwrap() error { return e.err }

// atKey and atIndex prepend a step to err's location. There is at most one
// locError in a chain: steps merge into it.
func atKey(key []byte, err error) error {
	if errors.Is(err, errNotPlan) || errors.Is(err, errVersion) {
		return err
	}
	var le *locError
	if errors.As(err, &le) {
		sep := "."
		if strings.HasPrefix(le.path, "[") {
			sep = ""
		}
		le.path = string(key) + sep + le.path
		return err
	}
	return &locError{path: string(key), err: err}
}

func atIndex(i int, err error) error {
	step := "[" + strconv.Itoa(i) + "]"
	var le *locError
	if errors.As(err, &le) {
		sep := "."
		if strings.HasPrefix(le.path, "[") {
			sep = ""
		}
		le.path = step + sep + le.path
		return err
	}
	return &locError{path: step, err: err}
}

// span records a captured value as offsets relative to the capture mark.
type span struct{ start, end int }

// beginCapture keeps every byte from the next value on in memory until
// endCapture.
func (s *scanner) beginCapture() {
	s.peek()
	s.mark = s.pos
}

// captureValue skips one value and returns its span within the capture.
func (s *scanner) captureValue() (span, error) {
	if _, ok := s.peek(); !ok {
		return span{}, s.eofError()
	}
	start := s.pos - s.mark
	if err := s.skipValue(); err != nil {
		return span{}, err
	}
	return span{start, s.pos - s.mark}, nil
}

// captured returns the bytes captured so far, valid until endCapture.
func (s *scanner) captured() []byte { return s.buf[s.mark:s.pos] }

func (s *scanner) endCapture() { s.mark = -1 }

// readIndexStep reads one relevant_attributes path step: a string (a key) or
// a number (an index). It returns the decoded key or raw number and whether
// it was a number. Other values are skipped and reported with ok false.
func (s *scanner) readIndexStep() (step []byte, isNum, ok bool, err error) {
	c, present := s.peek()
	if !present {
		return nil, false, false, s.eofError()
	}
	switch {
	case c == '"':
		b, err := s.readString()
		return b, false, err == nil, err
	case c == '-' || isDigit(c):
		// Keep the number's bytes in the buffer while scanning it.
		outer := s.mark
		if outer < 0 {
			s.mark = s.pos
		}
		start := s.pos - s.mark
		s.pos++
		err := s.number(c)
		s.scratch = append(s.scratch[:0], s.buf[s.mark+start:s.pos]...)
		s.mark = outer
		return s.scratch, true, err == nil, err
	}
	return nil, false, false, s.skipValue()
}
