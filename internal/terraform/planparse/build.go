package planparse

import (
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift/attribution"
)

// SetPaths sets c.Attributes and, unless isDrift, c.Unknown from the
// change's before, after, after_unknown, before_sensitive and
// after_sensitive as `show -json` renders them (JSON; nil for a member it
// leaves out), as Parse does for each resource_changes (isDrift false) and
// resource_drift entry: only when before and after are both objects. It is
// for readers of the same plan from another source (the plan file itself)
// that render its values as show -json would; the values are not kept.
// A resource_drift entry also gets its Shape.
func (c *Change) SetPaths(before, after, afterUnknown, beforeSensitive, afterSensitive []byte, isDrift bool) {
	if kind(before) != kObject || kind(after) != kObject {
		return
	}
	c.Attributes = attributePaths(before, after, afterUnknown, beforeSensitive, afterSensitive, !isDrift)
	if !isDrift {
		c.Unknown = unknownPaths(afterUnknown, beforeSensitive, afterSensitive)
		return
	}
	c.Shape = shapeOf(before, after, c.Attributes)
}

// shapeOf is the value-free shape of a change of objects before to after
// at paths: for each top-level attribute among them, in order, its JSON
// kind before and after ("tags_all: null → object"), joined with "; ".
func shapeOf(before, after []byte, paths []string) string {
	b, a := newFieldSet(fields(nil, before)), newFieldSet(fields(nil, after))
	var parts []string
	for _, p := range paths {
		top := p
		if i := strings.IndexAny(p, ".["); i >= 0 {
			top = p[:i]
		}
		part := top + ": " + shapeKind(b.get([]byte(top))) + " → " + shapeKind(a.get([]byte(top)))
		if len(parts) == 0 || parts[len(parts)-1] != part {
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, "; ")
}

// shapeKind names v's JSON kind: null (or missing), bool, string, number,
// empty list, list, empty object or object.
func shapeKind(v []byte) string {
	v = trim(v)
	switch {
	case len(v) == 0 || v[0] == 'n':
		return "null"
	case v[0] == '"':
		return "string"
	case v[0] == 't' || v[0] == 'f':
		return "bool"
	case v[0] == '[' && len(elements(nil, v)) == 0:
		return "empty list"
	case v[0] == '[':
		return "list"
	case v[0] == '{' && len(fields(nil, v)) == 0:
		return "empty object"
	case v[0] == '{':
		return "object"
	}
	return "number"
}

// SetIDs sets c.IDs, for a resource_drift entry, from its after value (the
// object as it is now) or, when the object is gone, its before value,
// leaving out what either sensitivity marker calls sensitive
// (attribution.IDsJSON). It sets nothing when neither is an object.
func (c *Change) SetIDs(before, after, beforeSensitive, afterSensitive []byte) {
	values := after
	if kind(values) != kObject {
		values = before
	}
	if kind(values) != kObject {
		return
	}
	if ids := attribution.IDsJSON(values, beforeSensitive, afterSensitive); len(ids) > 0 {
		c.IDs = ids
	}
}

// AppendPathKey appends an attribute name or map key to an attribute path
// as Plan's paths spell it: a.b for identifiers, a["k.x"] otherwise.
func AppendPathKey(path []byte, key string) []byte { return appendKey(path, []byte(key)) }

// AppendPathIndex appends a list index to an attribute path: a[0].
func AppendPathIndex(path []byte, i int) []byte { return appendIndex(path, i) }
