package planparse

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

// AppendPathKey appends an attribute name or map key to an attribute path
// as Plan's paths spell it: a.b for identifiers, a["k.x"] otherwise.
func AppendPathKey(path []byte, key string) []byte { return appendKey(path, []byte(key)) }

// AppendPathIndex appends a list index to an attribute path: a[0].
func AppendPathIndex(path []byte, i int) []byte { return appendIndex(path, i) }
