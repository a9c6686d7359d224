package planparse

import (
	"bytes"
	"slices"
	"strconv"
)

// attributePaths diffs before against after and returns the sorted changed
// attribute paths. With unknown set it also returns the paths of the true
// leaves of afterUnknown (values known only after apply).
//
// Normalisation: a missing key, null and "" are the same empty value, and
// the empty value equals {} and [] (recursively), so provider round trips
// such as null -> {}, "" -> null or {"k": null} -> {} are not changes. {}
// and [] differ from each other (a type change), and false and 0 are not
// empty. Strings compare by decoded content, numbers by exact value
// (1 == 1.0 == 1e0).
//
// Sensitivity: where beforeSensitive or afterSensitive marks a subtree true,
// the subtree's path is reported (if its value changed) and the walk never
// descends into it, because map keys below a sensitive value may themselves
// be secrets. No value is ever copied: the result holds paths only.
func attributePaths(before, after, afterUnknown, beforeSensitive, afterSensitive []byte, unknown bool) []string {
	var d differ
	d.diff(before, after, beforeSensitive, afterSensitive)
	if unknown {
		d.unknown(afterUnknown, beforeSensitive, afterSensitive)
	}
	slices.Sort(d.out)
	return dropDescendants(slices.Compact(d.out))
}

// unknownPaths returns the sorted paths of the true leaves of an
// after_unknown marker: the values a planned change knows only after apply
// (what the provider computes, not what the configuration sets).
func unknownPaths(afterUnknown, beforeSensitive, afterSensitive []byte) []string {
	var d differ
	d.unknown(afterUnknown, beforeSensitive, afterSensitive)
	slices.Sort(d.out)
	return dropDescendants(slices.Compact(d.out))
}

// dropDescendants removes paths under another reported path: when a whole
// attribute is reported (e.g. "output", now unknown) its former children
// ("output.app") add nothing.
func dropDescendants(paths []string) []string {
	set := make(map[string]bool, len(paths))
	for _, p := range paths {
		set[p] = true
	}
	out := paths[:0]
	for _, p := range paths {
		if !hasReportedParent(p, set) {
			out = append(out, p)
		}
	}
	return out
}

// hasReportedParent reports whether a proper prefix of p that ends at a
// path step ("a" of "a.b" or "a[0]") is in set. Quoted map keys may hold
// '.' or '[', which only makes this drop a path whose parent-looking
// prefix was itself reported: harmless.
func hasReportedParent(p string, set map[string]bool) bool {
	for i := 1; i < len(p); i++ {
		if (p[i] == '.' || p[i] == '[') && set[p[:i]] {
			return true
		}
	}
	return false
}

// maxPathDepth bounds how deep the walks descend. Real attribute paths are
// a handful of steps; below this depth a difference is reported at the
// cut-off path, compared byte for byte, so adversarial nesting costs
// O(size * maxPathDepth), not O(size * nesting).
const maxPathDepth = 32

// differ collects attribute paths; path is the current position.
type differ struct {
	path  []byte
	depth int
	out   []string
}

func (d *differ) emit() {
	if len(d.path) > 0 {
		d.out = append(d.out, string(d.path))
	}
}

func isTrue(marker []byte) bool { return bytes.Equal(trim(marker), []byte("true")) }

// markerFields and markerElements parse a sensitivity (or unknown) marker
// once per node, so that children look their markers up cheaply.
func markerFields(marker []byte) fieldSet {
	if kind(marker) != kObject {
		return fieldSet{}
	}
	return newFieldSet(fields(nil, marker))
}

func markerElements(marker []byte) [][]byte {
	if kind(marker) != kArray {
		return nil
	}
	return elements(nil, marker)
}

func (d *differ) diff(a, b, sa, sb []byte) {
	if isTrue(sa) || isTrue(sb) {
		if !equalNorm(a, b, 0) {
			d.emit()
		}
		return
	}
	if bytes.Equal(a, b) {
		return
	}
	if d.depth >= maxPathDepth {
		if !bytes.Equal(trim(a), trim(b)) {
			d.emit()
		}
		return
	}
	d.depth++
	defer func() { d.depth-- }()
	ka, kb := kind(a), kind(b)
	switch {
	case ka == kEmpty && kb == kEmpty:
	case (ka == kObject || ka == kEmpty) && (kb == kObject || kb == kEmpty):
		ma, mb := markerFields(sa), markerFields(sb)
		union(fields(nil, a), fields(nil, b), func(key, va, vb []byte) bool {
			n := len(d.path)
			d.path = appendKey(d.path, unquote(key))
			d.diff(va, vb, ma.get(key), mb.get(key))
			d.path = d.path[:n]
			return true
		})
	case (ka == kArray || ka == kEmpty) && (kb == kArray || kb == kEmpty):
		ea, eb := elements(nil, a), elements(nil, b)
		ma, mb := markerElements(sa), markerElements(sb)
		for i := range max(len(ea), len(eb)) {
			n := len(d.path)
			d.path = appendIndex(d.path, i)
			d.diff(at(ea, i), at(eb, i), at(ma, i), at(mb, i))
			d.path = d.path[:n]
		}
	case ka != kb:
		d.emit()
	default:
		if !scalarEqual(a, b, ka) {
			d.emit()
		}
	}
}

// unknown reports the paths of true leaves in an after_unknown marker.
func (d *differ) unknown(u, sa, sb []byte) {
	if isTrue(sa) || isTrue(sb) || d.depth >= maxPathDepth {
		if anyTrue(u, 0) {
			d.emit()
		}
		return
	}
	d.depth++
	defer func() { d.depth-- }()
	switch kind(u) {
	case kBool:
		if isTrue(u) {
			d.emit()
		}
	case kObject:
		ma, mb := markerFields(sa), markerFields(sb)
		for _, f := range fields(nil, u) {
			n := len(d.path)
			d.path = appendKey(d.path, unquote(f.key))
			d.unknown(f.val, ma.get(f.key), mb.get(f.key))
			d.path = d.path[:n]
		}
	case kArray:
		ma, mb := markerElements(sa), markerElements(sb)
		for i, e := range elements(nil, u) {
			n := len(d.path)
			d.path = appendIndex(d.path, i)
			d.unknown(e, at(ma, i), at(mb, i))
			d.path = d.path[:n]
		}
	}
}

// anyTrue reports whether marker u has a true leaf. Past maxPathDepth it
// answers conservatively from the bytes (a key named "true" counts).
func anyTrue(u []byte, depth int) bool {
	if depth >= maxPathDepth {
		return bytes.Contains(u, []byte("true"))
	}
	switch kind(u) {
	case kBool:
		return isTrue(u)
	case kObject:
		for _, f := range fields(nil, u) {
			if anyTrue(f.val, depth+1) {
				return true
			}
		}
	case kArray:
		for _, e := range elements(nil, u) {
			if anyTrue(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// isIdentifier reports whether key can be written as .key in a path: an
// HCL identifier (ASCII letters, digits, '_' and '-', not starting with a
// digit or '-').
func isIdentifier(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	for i, c := range key {
		switch {
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		case i > 0 && (c == '-' || (c >= '0' && c <= '9')):
		default:
			return false
		}
	}
	return true
}

// appendKey appends a decoded map key or attribute name to an attribute
// path: a.b for identifiers, a["k.x"] for anything else.
func appendKey(path, key []byte) []byte {
	if isIdentifier(key) {
		if len(path) > 0 {
			path = append(path, '.')
		}
		return append(path, key...)
	}
	path = append(path, '[')
	path = strconv.AppendQuote(path, string(key))
	return append(path, ']')
}

func appendIndex(path []byte, i int) []byte {
	path = append(path, '[')
	path = strconv.AppendInt(path, int64(i), 10)
	return append(path, ']')
}
