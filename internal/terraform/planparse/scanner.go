package planparse

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
