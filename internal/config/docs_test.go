package config

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// referencePage is the configuration reference: every key of the config
// file has its entry there, once.
const referencePage = "../../docs/configuration.md"

// configKey is one key of the config file, found by walking Config's yaml
// tags: its path in the reference's notation, and the struct field it is.
type configKey struct {
	path  string       // "server.auth.proxy.secret_file", "workspaces[].ignore[].address", "runner.kubernetes.workspaces.<>.secret_env.<>.key"
	owner reflect.Type // the struct that declares the field
	field string       // its yaml name
	leaf  bool         // not a struct, nor a list or map of structs
}

// configKeys walks t's yaml keys. A list's elements are written `key[]`, a
// map's keys `<>`; `yaml:"-"` fields and unexported ones are not keys,
// `,inline` fields add their keys to the parent's.
func configKeys(t reflect.Type, prefix string) []configKey {
	var keys []configKey
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			keys = append(keys, configKeys(deref(f.Type), prefix)...)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		// The element under lists and maps: `key[]`, `key.<>`.
		elem, elemPath := deref(f.Type), path
		for elem.Kind() == reflect.Slice || elem.Kind() == reflect.Map {
			if elem.Kind() == reflect.Slice {
				elemPath += "[]"
			} else {
				elemPath += ".<>"
			}
			elem = deref(elem.Elem())
		}
		isStruct := elem.Kind() == reflect.Struct
		keys = append(keys, configKey{path: path, owner: t, field: name, leaf: !isStruct})
		if isStruct {
			keys = append(keys, configKeys(elem, elemPath)...)
		}
	}
	return keys
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// referenceRow is one row of a key table of the reference page.
type referenceRow struct {
	line     int
	keys     []string        // full paths; `…x.y` (any key ending in x.y) kept with its "…"
	names    map[string]bool // every word in the row's code spans
	original string
}

var (
	codeSpan    = regexp.MustCompile("`([^`]*)`")
	word        = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	placeholder = regexp.MustCompile(`<[^>]*>`)
)

// referenceRows reads the rows of the page's key tables (tables whose
// first column is headed "key"). A row's first cell names its keys, as the
// page writes them:
//
//   - a full path: `server.auth.proxy.secret_file`, `workspaces[].log_plan_text`,
//     a list as `server.auth.tokens[]`, a map's keys as `<ws>`:
//     `runner.kubernetes.workspaces.<ws>.secret_env.<ENV>`;
//   - after one, siblings: `client_id` or `.password_file`
//     (`server.auth.oidc.issuer_url`, `client_id`, `client_secret_file`);
//   - `…remediation.mode`: that key wherever it is (defaults, workspaces,
//     discover entries).
func referenceRows(t *testing.T, page string) []referenceRow {
	var rows []referenceRow
	inKeyTable := false
	for i, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, "|") {
			inKeyTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		first := strings.TrimSpace(cells[0])
		switch {
		case first == "key":
			inKeyTable = true
			continue
		case !inKeyTable || strings.HasPrefix(first, "---"):
			continue
		}
		row := referenceRow{line: i + 1, names: map[string]bool{}, original: line}
		prev := ""
		for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
			k := strings.TrimSuffix(placeholder.ReplaceAllString(strings.TrimSpace(m[1]), "<>"), "[]")
			switch {
			case strings.HasPrefix(k, "…"):
			case prev != "" && (strings.HasPrefix(k, ".") || !strings.ContainsAny(k, ".[<")):
				parent := prev[:strings.LastIndex(prev, ".")+1]
				k = parent + strings.TrimPrefix(k, ".")
			}
			row.keys = append(row.keys, k)
			if !strings.HasPrefix(k, "…") {
				prev = k
			}
		}
		if len(row.keys) == 0 {
			t.Errorf("%s:%d: a row of a key table names no key: %s", referencePage, i+1, line)
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			for _, w := range word.FindAllString(m[1], -1) {
				row.names[w] = true
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// matches reports whether the reference's key k (as referenceRows returns
// it) names the config key path.
func matches(k, path string) bool {
	if suffix, ok := strings.CutPrefix(k, "…"); ok {
		return path == suffix || strings.HasSuffix(path, "."+suffix)
	}
	return k == path
}

// TestConfigReference fails when a key of the config file (Config's yaml
// keys, walked by reflection) has no entry in docs/configuration.md, when
// a key has two, and when the page names a key the config does not have.
//
// A key is documented by a row that names it (see referenceRows); or by
// the row of one of its ancestors that names, in its code spans, every key
// between them (`server.auth.tokens[]`: `name`, `role`, `file`, and
// `workspaces` (`labels`, `owners`)); or, for a field of a struct the
// config uses in several places (a discover entry's `defaults.ignore[]`
// and a workspace's `ignore[]`, say), by the entry of the same field in
// another place. Keys holding structs are documented through their keys;
// only the others (scalars, lists and maps of scalars) need an entry.
func TestConfigReference(t *testing.T) {
	data, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatal(err)
	}
	rows := referenceRows(t, string(data))
	keys := configKeys(reflect.TypeOf(Config{}), "")
	if len(keys) < 100 {
		t.Fatalf("walked only %d config keys", len(keys))
	}

	// Every key the page names is a config key.
	for _, r := range rows {
		for _, k := range r.keys {
			found := false
			for _, key := range keys {
				// The key, or what holds keys: `runner.kubernetes.workspaces.<ws>.secret_env.<ENV>`.
				found = found || matches(k, key.path) ||
					(!strings.HasPrefix(k, "…") && (strings.HasPrefix(key.path, k+".") || strings.HasPrefix(key.path, k+"[]")))
			}
			if !found {
				t.Errorf("%s:%d: `%s` is not a config key (a typo, or a key that was removed?)", referencePage, r.line, k)
			}
		}
	}

	direct := func(path string) []referenceRow {
		var hits []referenceRow
		for _, r := range rows {
			for _, k := range r.keys {
				if matches(k, path) {
					hits = append(hits, r)
					break
				}
			}
		}
		return hits
	}
	// byAncestor: a row of an ancestor names every key between them.
	byAncestor := func(path string) bool {
		segs := strings.Split(path, ".")
		for i := len(segs) - 1; i > 0; i-- {
			anc := strings.TrimSuffix(strings.Join(segs[:i], "."), "[]")
			for _, r := range direct(anc) {
				all := true
				for _, s := range segs[i:] {
					s = strings.TrimSuffix(s, "[]")
					all = all && (s == "<>" || r.names[s])
				}
				if all {
					return true
				}
			}
		}
		return false
	}

	documented := map[string]bool{}
	type field struct {
		owner reflect.Type
		name  string
	}
	fieldDocumented := map[field]bool{}
	for _, key := range keys {
		hits := direct(key.path)
		if key.leaf && len(hits) > 1 {
			var lines []string
			for _, r := range hits {
				lines = append(lines, strings.TrimSpace(strings.Split(r.original, "|")[1]))
			}
			t.Errorf("config key %s is documented %d times in %s: %s", key.path, len(hits), referencePage, strings.Join(lines, "; "))
		}
		if len(hits) > 0 || byAncestor(key.path) {
			documented[key.path] = true
			fieldDocumented[field{key.owner, key.field}] = true
		}
	}
	var missing []string
	for _, key := range keys {
		if key.leaf && !documented[key.path] && !fieldDocumented[field{key.owner, key.field}] {
			missing = append(missing, key.path)
		}
	}
	sort.Strings(missing)
	for _, k := range missing {
		t.Errorf("config key %s has no entry in %s", k, referencePage)
	}
}
