package planparse

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
