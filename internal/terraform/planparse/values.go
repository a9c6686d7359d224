package planparse

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
