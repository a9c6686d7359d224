package planparse

import "github.com/driftwatch/driftwatch/internal/drift/attribution"

// SetPaths sets c.Attributes and, unless isDrift, c.Unknown from the
// change's before, after, after_unknown, before_sensitive and
// after_sensitive as `show -json` renders them (JSON; nil for a member it
// leaves out), as Parse does for each resource_changes (isDrift false) and
// resource_drift entry: only when before and after are both objects. It is
// for readers of the same plan from another source (the plan file itself)
// that render its values as show -json would; the values are not kept.
func (c *Change) SetPaths(before, after, afterUnknown, beforeSensitive, afterSensitive []byte, isDrift bool) {
	if kind(before) != kObject || kind(after) != kObject {
		return
	}
	c.Attributes = attributePaths(before, after, afterUnknown, beforeSensitive, afterSensitive, !isDrift)
	if !isDrift {
		c.Unknown = unknownPaths(afterUnknown, beforeSensitive, afterSensitive)
	}
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
