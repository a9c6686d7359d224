package planfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The values of a plan's changes are cty values in msgpack, each encoded
// against its resource type's schema, which this package does not have.
// The encoding is self-describing enough to render them as JSON the way
// `show -json` does, without the schema: objects and maps are msgpack maps
// with string keys, lists, sets and tuples are arrays, strings are str,
// numbers are int, float or (beyond float64) a decimal string, an unknown
// value is extension type 0 (or 12, with refinements), and a value of
// dynamic type is a two-element array whose first element, the type in
// JSON, is the only bin a value ever holds. Sets and lists are the same
// JSON array, as in show -json.

// mkind is a decoded msgpack value's kind.
type mkind uint8

const (
	mNull mkind = iota
	mBool
	mNumber // text is the JSON number
	mString
	mArray
	mMap
	mUnknown
)

// mval is a decoded value. It lives only while a change is rendered.
type mval struct {
	kind  mkind
	b     bool
	text  string // number or string
	elems []mval // array elements, or map values in key order
	keys  []string
}

// maxDepth bounds nesting, against a hostile file.
const maxDepth = 64

// msgpack extension types cty uses for unknown values.
const (
	extUnknown        = 0
	extRefinedUnknown = 12
)

var errMsgpack = errors.New("malformed msgpack value")

type mreader struct {
	b []byte
}

func decodeMsgpack(b []byte) (mval, error) {
	r := &mreader{b: b}
	v, err := r.value(0)
	if err == nil && len(r.b) != 0 {
		err = fmt.Errorf("%w: trailing bytes", errMsgpack)
	}
	return v, err
}

func (r *mreader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.b) {
		return nil, fmt.Errorf("%w: truncated", errMsgpack)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out, nil
}

func (r *mreader) uint(n int) (uint64, error) {
	b, err := r.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

func (r *mreader) value(depth int) (mval, error) {
	if depth > maxDepth {
		return mval{}, fmt.Errorf("%w: nested too deep", errMsgpack)
	}
	hb, err := r.take(1)
	if err != nil {
		return mval{}, err
	}
	h := hb[0]
	switch {
	case h <= 0x7f:
		return mval{kind: mNumber, text: strconv.Itoa(int(h))}, nil
	case h >= 0xe0:
		return mval{kind: mNumber, text: strconv.Itoa(int(int8(h)))}, nil
	case h&0xf0 == 0x80:
		return r.mapOf(int(h&0x0f), depth)
	case h&0xf0 == 0x90:
		return r.arrayOf(int(h&0x0f), depth)
	case h&0xe0 == 0xa0:
		return r.str(int(h & 0x1f))
	}
	switch h {
	case 0xc0:
		return mval{kind: mNull}, nil
	case 0xc2, 0xc3:
		return mval{kind: mBool, b: h == 0xc3}, nil
	case 0xc4, 0xc5, 0xc6: // bin: only a dynamic value's type
		return mval{}, errBin
	case 0xc7, 0xc8, 0xc9: // ext 8/16/32
		n, err := r.uint(1 << (h - 0xc7))
		if err != nil {
			return mval{}, err
		}
		return r.ext(int(n))
	case 0xca:
		u, err := r.uint(4)
		if err != nil {
			return mval{}, err
		}
		return number(float64(math.Float32frombits(uint32(u))))
	case 0xcb:
		u, err := r.uint(8)
		if err != nil {
			return mval{}, err
		}
		return number(math.Float64frombits(u))
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, err := r.uint(1 << (h - 0xcc))
		if err != nil {
			return mval{}, err
		}
		return mval{kind: mNumber, text: strconv.FormatUint(u, 10)}, nil
	case 0xd0, 0xd1, 0xd2, 0xd3:
		n := 1 << (h - 0xd0)
		u, err := r.uint(n)
		if err != nil {
			return mval{}, err
		}
		shift := 64 - 8*n
		return mval{kind: mNumber, text: strconv.FormatInt(int64(u<<shift)>>shift, 10)}, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1..16
		return r.ext(1 << (h - 0xd4))
	case 0xd9, 0xda, 0xdb:
		n, err := r.uint(1 << (h - 0xd9))
		if err != nil {
			return mval{}, err
		}
		return r.str(int(n))
	case 0xdc, 0xdd:
		n, err := r.uint(2 << (h - 0xdc))
		if err != nil {
			return mval{}, err
		}
		return r.arrayOf(int(n), depth)
	case 0xde, 0xdf:
		n, err := r.uint(2 << (h - 0xde))
		if err != nil {
			return mval{}, err
		}
		return r.mapOf(int(n), depth)
	}
	return mval{}, fmt.Errorf("%w: unknown type byte", errMsgpack)
}

// errBin is a bin outside a dynamic value's wrapper.
var errBin = fmt.Errorf("%w: unexpected bin", errMsgpack)

func number(f float64) (mval, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return mval{}, fmt.Errorf("%w: not a finite number", errMsgpack)
	}
	return mval{kind: mNumber, text: strconv.FormatFloat(f, 'g', -1, 64)}, nil
}

func (r *mreader) str(n int) (mval, error) {
	b, err := r.take(n)
	if err != nil {
		return mval{}, err
	}
	return mval{kind: mString, text: string(b)}, nil
}

func (r *mreader) ext(n int) (mval, error) {
	tb, err := r.take(1)
	if err != nil {
		return mval{}, err
	}
	if _, err := r.take(n); err != nil {
		return mval{}, err
	}
	if t := int8(tb[0]); t != extUnknown && t != extRefinedUnknown {
		return mval{}, fmt.Errorf("%w: extension type %d", errMsgpack, t)
	}
	return mval{kind: mUnknown}, nil
}

func (r *mreader) arrayOf(n int, depth int) (mval, error) {
	if n > len(r.b) {
		return mval{}, fmt.Errorf("%w: truncated", errMsgpack)
	}
	// A dynamic value: [type as JSON in a bin, the value].
	if n == 2 && len(r.b) > 0 && r.b[0] >= 0xc4 && r.b[0] <= 0xc6 {
		h := r.b[0]
		r.b = r.b[1:]
		l, err := r.uint(1 << (h - 0xc4))
		if err != nil {
			return mval{}, err
		}
		if _, err := r.take(int(l)); err != nil {
			return mval{}, err
		}
		return r.value(depth + 1)
	}
	v := mval{kind: mArray, elems: make([]mval, 0, n)}
	for range n {
		e, err := r.value(depth + 1)
		if err != nil {
			return mval{}, err
		}
		v.elems = append(v.elems, e)
	}
	return v, nil
}

func (r *mreader) mapOf(n int, depth int) (mval, error) {
	if n > len(r.b)/2 {
		return mval{}, fmt.Errorf("%w: truncated", errMsgpack)
	}
	v := mval{kind: mMap, elems: make([]mval, 0, n), keys: make([]string, 0, n)}
	for range n {
		k, err := r.value(depth + 1)
		if err != nil {
			return mval{}, err
		}
		if k.kind != mString {
			return mval{}, fmt.Errorf("%w: a map key that is not a string", errMsgpack)
		}
		e, err := r.value(depth + 1)
		if err != nil {
			return mval{}, err
		}
		v.keys = append(v.keys, k.text)
		v.elems = append(v.elems, e)
	}
	return v, nil
}

// known reports whether v holds no unknown value.
func (v mval) known() bool {
	switch v.kind {
	case mUnknown:
		return false
	case mArray, mMap:
		for _, e := range v.elems {
			if !e.known() {
				return false
			}
		}
	}
	return true
}

// appendJSON renders v as show -json renders a change's before or after:
// an unknown value is left out of an object and null in an array.
func (v mval) appendJSON(b []byte) []byte {
	switch v.kind {
	case mNull, mUnknown:
		return append(b, "null"...)
	case mBool:
		return strconv.AppendBool(b, v.b)
	case mNumber:
		return append(b, v.text...)
	case mString:
		return appendString(b, v.text)
	case mArray:
		return v.appendArray(b, mval.appendJSON)
	}
	b = append(b, '{')
	first := true
	for i, e := range v.elems {
		if e.kind == mUnknown {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(appendString(b, v.keys[i]), ':')
		b = e.appendJSON(b)
	}
	return append(b, '}')
}

// appendUnknown renders v's after_unknown marker as show -json does: true
// for an unknown value, false for a known leaf or null, the same shape for
// collections, with an object's false members left out.
func (v mval) appendUnknown(b []byte) []byte {
	switch v.kind {
	case mUnknown:
		return append(b, "true"...)
	case mArray:
		return v.appendArray(b, mval.appendUnknown)
	case mMap:
		b = append(b, '{')
		first := true
		for i, e := range v.elems {
			if e.kind != mUnknown && e.kind != mArray && e.kind != mMap {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(appendString(b, v.keys[i]), ':')
			b = e.appendUnknown(b)
		}
		return append(b, '}')
	}
	return append(b, "false"...)
}

// appendArray renders v's elements, each with render, as a JSON array.
func (v mval) appendArray(b []byte, render func(mval, []byte) []byte) []byte {
	b = append(b, '[')
	for i, e := range v.elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = render(e, b)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string, escaped as show -json's encoder
// escapes it.
func appendString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil { // invalid UTF-8 is replaced, never an error
		return append(b, `""`...)
	}
	return append(b, q...)
}

// elementKey decodes a path step's element key: a string (a map key) or a
// whole number (a list or tuple index). ok is false for any other key (a
// set element is addressed by its value).
func elementKey(mp []byte) (key string, index int, isIndex, ok bool) {
	v, err := decodeMsgpack(mp)
	if err != nil {
		return "", 0, false, false
	}
	switch v.kind {
	case mString:
		return v.text, 0, false, true
	case mNumber:
		i, err := strconv.Atoi(v.text)
		if err != nil || i < 0 {
			return "", 0, false, false
		}
		return "", i, true, true
	}
	return "", 0, false, false
}
