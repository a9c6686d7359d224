package planfile

import (
	"cmp"
	"errors"
	"strconv"
	"strings"
)

// instAddr is a resource instance address split into the parts show -json
// orders resource_changes by: module path, mode, type, name and instance
// key. Terraform and OpenTofu write the address in the plan file as they
// display it: module.NAME[KEY]. … [data.]TYPE.NAME[KEY].
type instAddr struct {
	modules []step
	mode    string
	typ     string
	name    string
	key     key
}

type step struct {
	name string
	key  key
}

// key is an instance key: none, an int (count) or a string (for_each).
type key struct {
	kind byte // 0 none, 'I' int, 'S' string: the order show -json uses
	n    int
	s    string
}

var errAddr = errors.New("malformed resource instance address")

func parseInstAddr(a string) (instAddr, error) {
	var out instAddr
	for strings.HasPrefix(a, "module.") {
		name, k, rest, err := nameKey(a[len("module."):])
		if err != nil {
			return out, err
		}
		out.modules = append(out.modules, step{name: name, key: k})
		if !strings.HasPrefix(rest, ".") {
			return out, errAddr
		}
		a = rest[1:]
	}
	out.mode = modeManaged
	if strings.HasPrefix(a, "data.") {
		out.mode, a = modeData, a[len("data."):]
	}
	dot := strings.IndexByte(a, '.')
	if dot <= 0 {
		return out, errAddr
	}
	out.typ = a[:dot]
	name, k, rest, err := nameKey(a[dot+1:])
	if err != nil || rest != "" || !validName(out.typ) {
		return out, errAddr
	}
	out.name, out.key = name, k
	return out, nil
}

// nameKey reads NAME, then an optional [KEY], from the start of a.
func nameKey(a string) (name string, k key, rest string, err error) {
	end := strings.IndexAny(a, ".[")
	if end < 0 {
		end = len(a)
	}
	name, rest = a[:end], a[end:]
	if !validName(name) {
		return "", k, "", errAddr
	}
	if !strings.HasPrefix(rest, "[") {
		return name, k, rest, nil
	}
	rest = rest[1:]
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", k, "", errAddr
		}
		s, err := strconv.Unquote(q)
		if err != nil {
			return "", k, "", errAddr
		}
		// Terraform quotes keys as HCL does, template sequences doubled.
		s = strings.NewReplacer("$${", "${", "%%{", "%{").Replace(s)
		k, rest = key{kind: 'S', s: s}, rest[len(q):]
	} else {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return "", k, "", errAddr
		}
		n, err := strconv.Atoi(rest[:end])
		if err != nil {
			return "", k, "", errAddr
		}
		k, rest = key{kind: 'I', n: n}, rest[end:]
	}
	if !strings.HasPrefix(rest, "]") {
		return "", k, "", errAddr
	}
	return name, k, rest[1:], nil
}

func (k key) compare(o key) int {
	switch {
	case k.kind != o.kind:
		return int(k.kind) - int(o.kind)
	case k.kind == 'I':
		return cmp.Compare(k.n, o.n)
	}
	return strings.Compare(k.s, o.s)
}

// compare orders addresses as show -json orders resource_changes: the
// shorter module path first, then module names and keys, data before
// managed, type, name, and the instance key (none, then ints, then
// strings).
func (a instAddr) compare(o instAddr) int {
	if len(a.modules) != len(o.modules) {
		return len(a.modules) - len(o.modules)
	}
	for i, m := range a.modules {
		if c := strings.Compare(m.name, o.modules[i].name); c != 0 {
			return c
		}
		if c := m.key.compare(o.modules[i].key); c != 0 {
			return c
		}
	}
	switch {
	case a.mode != o.mode:
		if a.mode == modeData {
			return -1
		}
		return 1
	case a.typ != o.typ:
		return strings.Compare(a.typ, o.typ)
	case a.name != o.name:
		return strings.Compare(a.name, o.name)
	}
	return a.key.compare(o.key)
}
