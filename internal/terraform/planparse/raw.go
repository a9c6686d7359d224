package planparse

import (
	"bytes"
	"math/big"
	"unicode/utf16"
	"unicode/utf8"
)

// The functions in this file walk JSON values held in memory. They run only
// on bytes the scanner has already validated, so they do not re-check the
// grammar; they must still never panic, which the fuzz tests check.

func wsAt(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// trim drops surrounding white space from a raw value.
func trim(b []byte) []byte {
	i := wsAt(b, 0)
	j := len(b)
	for j > i && (b[j-1] == ' ' || b[j-1] == '\n' || b[j-1] == '\r' || b[j-1] == '\t') {
		j--
	}
	return b[i:j]
}

// rawSkip returns the index just past the value starting at b[i].
func rawSkip(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\n', '\r', '\t', ':':
			return i
		}
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		// Count the backslashes before the quote: an odd number escapes it.
		n := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// field is one member of an in-memory object: its raw key (without quotes,
// escapes undecoded) and its raw value.
type field struct {
	key []byte
	val []byte
}

// fields appends the members of object b to dst. b must be an object.
func fields(dst []field, b []byte) []field {
	i := wsAt(b, 0)
	if i >= len(b) || b[i] != '{' {
		return dst
	}
	i++
	for {
		i = wsAt(b, i)
		if i >= len(b) || b[i] != '"' {
			return dst
		}
		kEnd := stringEnd(b, i)
		key := b[i+1 : max(i+1, kEnd-1)]
		i = wsAt(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return dst
		}
		i = wsAt(b, i+1)
		vEnd := rawSkip(b, i)
		dst = append(dst, field{key: key, val: b[i:vEnd]})
		i = wsAt(b, vEnd)
		if i >= len(b) || b[i] != ',' {
			return dst
		}
		i++
	}
}

// elements appends the elements of array b to dst. b must be an array.
func elements(dst [][]byte, b []byte) [][]byte {
	i := wsAt(b, 0)
	if i >= len(b) || b[i] != '[' {
		return dst
	}
	i = wsAt(b, i+1)
	if i < len(b) && b[i] == ']' {
		return dst
	}
	for i < len(b) {
		end := rawSkip(b, i)
		if end == i {
			return dst
		}
		dst = append(dst, b[i:end])
		i = wsAt(b, end)
		if i >= len(b) || b[i] != ',' {
			return dst
		}
		i = wsAt(b, i+1)
	}
	return dst
}

// unquote decodes the content of a raw string (without its quotes).
func unquote(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hexRune(raw, i+1)
			if !ok {
				out = append(out, 'u')
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2, ok = hexRune(raw, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			out = append(out, raw[i])
		}
	}
	return out
}

func hexRune(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Value kinds for the normalised comparison.
const (
	kEmpty  = 'e' // missing, null or ""
	kObject = '{'
	kArray  = '['
	kString = '"'
	kNumber = '0'
	kBool   = 't'
)

func kind(v []byte) byte {
	v = trim(v)
	if len(v) == 0 {
		return kEmpty
	}
	switch v[0] {
	case 'n':
		return kEmpty
	case '"':
		if len(v) == 2 {
			return kEmpty
		}
		return kString
	case '{', '[':
		return v[0]
	case 't', 'f':
		return kBool
	}
	return kNumber
}

// scalarEqual compares two non-container values of the same kind: strings
// by decoded content, numbers by exact decimal value.
func scalarEqual(a, b []byte, k byte) bool {
	a, b = trim(a), trim(b)
	if bytes.Equal(a, b) {
		return true
	}
	switch k {
	case kString:
		if len(a) < 2 || len(b) < 2 {
			return false
		}
		return bytes.Equal(unquote(a[1:len(a)-1]), unquote(b[1:len(b)-1]))
	case kNumber:
		// Numbers are short; big.Rat compares 1, 1.0 and 1e0 exactly.
		if len(a) > 64 || len(b) > 64 {
			return false
		}
		ra, ok1 := new(big.Rat).SetString(string(a))
		rb, ok2 := new(big.Rat).SetString(string(b))
		return ok1 && ok2 && ra.Cmp(rb) == 0
	}
	return false
}

// equalNorm reports whether a and b are equal once null, "", {} and [] are
// treated as the same empty value (recursively, so {"k": null} equals {}).
// Past maxPathDepth it compares bytes.
func equalNorm(a, b []byte, depth int) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if depth >= maxPathDepth {
		return bytes.Equal(trim(a), trim(b))
	}
	ka, kb := kind(a), kind(b)
	switch {
	case ka == kEmpty && kb == kEmpty:
		return true
	case (ka == kObject || ka == kEmpty) && (kb == kObject || kb == kEmpty):
		return union(fields(nil, a), fields(nil, b), func(_, va, vb []byte) bool {
			return equalNorm(va, vb, depth+1)
		})
	case (ka == kArray || ka == kEmpty) && (kb == kArray || kb == kEmpty):
		ea, eb := elements(nil, a), elements(nil, b)
		for i := range max(len(ea), len(eb)) {
			if !equalNorm(at(ea, i), at(eb, i), depth+1) {
				return false
			}
		}
		return true
	case ka != kb:
		return false
	}
	return scalarEqual(a, b, ka)
}

func at(vs [][]byte, i int) []byte {
	if i < len(vs) {
		return vs[i]
	}
	return nil
}

// fieldSet looks up object members by decoded key. Small objects are
// searched linearly; large ones (big maps) through a map, so that diffing
// two maps stays linear.
type fieldSet struct {
	fs  []field
	idx map[string]int
}

const linearFields = 16

func newFieldSet(fs []field) fieldSet {
	set := fieldSet{fs: fs}
	if len(fs) > linearFields {
		set.idx = make(map[string]int, len(fs))
		for i := len(fs) - 1; i >= 0; i-- {
			set.idx[string(unquote(fs[i].key))] = i
		}
	}
	return set
}

// find returns the position of key (raw form) or -1.
func (set fieldSet) find(key []byte) int {
	if set.idx != nil {
		if i, ok := set.idx[string(unquote(key))]; ok {
			return i
		}
		return -1
	}
	for i, f := range set.fs {
		if bytes.Equal(f.key, key) {
			return i
		}
	}
	if bytes.IndexByte(key, '\\') >= 0 || hasEscapedKey(set.fs) {
		dk := unquote(key)
		for i, f := range set.fs {
			if bytes.Equal(unquote(f.key), dk) {
				return i
			}
		}
	}
	return -1
}

// get returns the value for key, or nil when absent.
func (set fieldSet) get(key []byte) []byte {
	if i := set.find(key); i >= 0 {
		return set.fs[i].val
	}
	return nil
}

func hasEscapedKey(fs []field) bool {
	for _, f := range fs {
		if bytes.IndexByte(f.key, '\\') >= 0 {
			return true
		}
	}
	return false
}

// union calls fn for every key of a or b, with both values (nil when a side
// lacks the key), a's keys first in order, then b's extra keys. It stops
// and returns false as soon as fn does.
func union(a, b []field, fn func(key, va, vb []byte) bool) bool {
	sb := newFieldSet(b)
	used := make([]bool, len(b))
	for _, f := range a {
		var vb []byte
		if j := sb.find(f.key); j >= 0 {
			used[j] = true
			vb = b[j].val
		}
		if !fn(f.key, f.val, vb) {
			return false
		}
	}
	for j, f := range b {
		if !used[j] && !fn(f.key, nil, f.val) {
			return false
		}
	}
	return true
}
