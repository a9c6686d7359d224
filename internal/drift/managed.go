package drift

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Managed is one managed resource instance of a workspace's state, as a
// check saw it (the plan's prior state, refreshed): what a scan compares a
// listed resource with. It carries no attribute value but the instance's
// identity (a resource identity is the set of non-secret values its
// provider names it by) and, for states written before resource
// identities existed, its id.
type Managed struct {
	Address  string            `json:"address"`
	Type     string            `json:"type"`
	ID       string            `json:"id,omitempty"`
	Identity map[string]string `json:"identity,omitempty"`
}

// Listed is one resource a scan's `terraform query` found: its type, the
// name its provider displays and its identity.
type Listed struct {
	Type        string            `json:"type"`
	DisplayName string            `json:"display_name"`
	Identity    map[string]string `json:"identity"`
}

// IdentityOf renders a JSON object of identity values canonically:
// strings as they are, other scalars and nested values as compact JSON;
// null values are left out. It returns nil for anything but an object
// with at least one value.
func IdentityOf(raw []byte) map[string]string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		switch {
		case string(v) == "null":
			continue
		case json.Unmarshal(v, &s) == nil:
			out[k] = s
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, v); err == nil {
				out[k] = buf.String()
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// IdentityString renders an identity for people and keys, sorted by
// name: `filename="/srv/a"`, pairs joined by ", ".
func IdentityString(id map[string]string) string {
	keys := slices.Sorted(maps.Keys(id))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(id[k])
	}
	return strings.Join(parts, ", ")
}
