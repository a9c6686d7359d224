package attribution

import (
	"encoding/json"
	"strings"
	"unicode"
)

// idAttributes are the top-level attributes that name a resource at its
// provider, across the common providers: the Terraform id, AWS's ARN and
// unique ids, Google's self link, Azure's resource id, and a name.
var idAttributes = []string{"id", "arn", "name", "self_link", "unique_id", "resource_id"}

// metadataAttributes are the keys of a Kubernetes object's metadata block
// (the kubernetes provider's "metadata", a list of one object) that IDs
// keeps, as "metadata.<key>".
var metadataAttributes = []string{"name", "namespace", "uid"}

// maxIDLen drops an attribute too long to be an identifier.
const maxIDLen = 1024

// IDs picks the identifying attributes from a resource's values, as a
// state or plan JSON holds them (attribute name to decoded JSON value):
// the top-level strings among id, arn, name, self_link, unique_id and
// resource_id, and a Kubernetes object's metadata name, namespace and uid.
// Empty values, values longer than 1 KiB and values with control
// characters are left out. The caller passes values with sensitive
// attributes already removed. The result is never nil.
func IDs(attributes map[string]any) map[string]string {
	out := map[string]string{}
	for _, k := range idAttributes {
		if s, ok := idValue(attributes[k]); ok {
			out[k] = s
		}
	}
	if meta, ok := attributes["metadata"].([]any); ok && len(meta) == 1 {
		if m, ok := meta[0].(map[string]any); ok {
			for _, k := range metadataAttributes {
				if s, ok := idValue(m[k]); ok {
					out["metadata."+k] = s
				}
			}
		}
	}
	return out
}

// idValue is v if it is a usable identifier string.
func idValue(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || s == "" || len(s) > maxIDLen || strings.ContainsFunc(s, unicode.IsControl) {
		return "", false
	}
	return s, true
}

// IDsJSON is IDs over a resource's values as plan JSON renders them
// (values, a JSON object) with the plan's sensitivity markers (each a
// before_sensitive or after_sensitive value: true, or an object or list
// of markers mirroring values). An attribute any marker calls sensitive
// is left out, as is a metadata key marked within the metadata block;
// values marked sensitive as a whole give no ids. Malformed JSON gives
// none either. The result is never nil.
func IDsJSON(values []byte, sensitive ...[]byte) map[string]string {
	var attrs map[string]any
	if json.Unmarshal(values, &attrs) != nil {
		return map[string]string{}
	}
	for _, s := range sensitive {
		var m any
		if len(s) == 0 || json.Unmarshal(s, &m) != nil {
			continue
		}
		if m == true {
			return map[string]string{}
		}
		marks, _ := m.(map[string]any)
		for k, mark := range marks {
			if mark == true {
				delete(attrs, k)
			}
		}
		if list, ok := marks["metadata"].([]any); ok && len(list) > 0 {
			dropMarked(attrs, list[0])
		}
	}
	return IDs(attrs)
}

// dropMarked removes from a Kubernetes object's metadata the keys mark
// (the marker of its first element) calls sensitive, or the whole block.
func dropMarked(attrs map[string]any, mark any) {
	if mark == true {
		delete(attrs, "metadata")
		return
	}
	marks, _ := mark.(map[string]any)
	meta, ok := attrs["metadata"].([]any)
	if !ok || len(meta) == 0 {
		return
	}
	m, ok := meta[0].(map[string]any)
	if !ok {
		return
	}
	for k, v := range marks {
		if v == true {
			delete(m, k)
		}
	}
}
