package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// positions maps a YAML key path (e.g. "workspaces[1].source.path") to the
// line it was written on, so semantic errors found after decoding can still
// name file, line and key.
type positions struct {
	file  string
	lines map[string]int
}

// at formats "file:line: path" for a key path, falling back to the nearest
// parent that has a recorded line.
func (p *positions) at(path string) string {
	for q := path; ; {
		if l, ok := p.lines[q]; ok {
			return fmt.Sprintf("%s:%d: %s", p.file, l, path)
		}
		i := strings.LastIndexAny(q, ".[")
		if i <= 0 {
			break
		}
		q = q[:i]
	}
	return fmt.Sprintf("%s: %s", p.file, path)
}

// errorf builds an error naming file, line and key.
func (p *positions) errorf(path, format string, args ...any) error {
	return fmt.Errorf("%s: %s", p.at(path), fmt.Sprintf(format, args...))
}

// durationTypes are checked as durations: Duration, and time.Duration in
// the settings config embeds from the packages that own them (for example
// runner.kubernetes's default_timeout), which YAML decodes from the same
// Go duration strings.
var durationTypes = map[reflect.Type]bool{reflect.TypeOf(Duration(0)): true, reflect.TypeOf(time.Duration(0)): true}

// check walks node against the Go type t strictly: unknown and duplicate
// keys, wrong node kinds and unparsable scalars are reported with file, line
// and key path. It records the line of every key it visits.
func (p *positions) check(node *yaml.Node, t reflect.Type, path string) []error {
	if node.Kind == yaml.AliasNode {
		node = node.Alias
	}
	if path != "" {
		if _, ok := p.lines[path]; !ok {
			p.lines[path] = node.Line
		}
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return nil // null leaves the zero value (or the default)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	kindErr := func(want string) []error {
		return []error{fmt.Errorf("%s:%d: %s: expected %s, got %s", p.file, node.Line, displayPath(path), want, nodeKind(node))}
	}
	switch {
	case durationTypes[t]:
		if node.Kind != yaml.ScalarNode {
			return kindErr("a duration such as 10m")
		}
		d, err := time.ParseDuration(node.Value)
		if err != nil || d <= 0 {
			return []error{fmt.Errorf("%s:%d: %s: invalid duration %q (use a positive Go duration such as 90s, 10m, 1h30m)", p.file, node.Line, displayPath(path), node.Value)}
		}
		return nil
	case t == reflect.TypeOf(WaitDuration(0)):
		if node.Kind != yaml.ScalarNode {
			return kindErr("a duration such as 30s")
		}
		d, err := time.ParseDuration(node.Value)
		if err != nil || d < 0 {
			return []error{fmt.Errorf("%s:%d: %s: invalid duration %q (use 0s or a positive Go duration such as 30s, 5m)", p.file, node.Line, displayPath(path), node.Value)}
		}
		return nil
	case t.Kind() == reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return kindErr("a mapping")
		}
		fields := map[string]reflect.Type{}
		var names []string
		collectFields(t, fields, &names)
		var errs []error
		seen := map[string]int{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			sub := joinPath(path, k.Value)
			if first, dup := seen[k.Value]; dup {
				errs = append(errs, fmt.Errorf("%s:%d: %s: duplicate key (first set at line %d)", p.file, k.Line, displayPath(sub), first))
				continue
			}
			seen[k.Value] = k.Line
			ft, ok := fields[k.Value]
			if !ok {
				hint := fmt.Sprintf("known keys: %s", strings.Join(names, ", "))
				if s := closest(k.Value, names); s != "" {
					hint = fmt.Sprintf("did you mean %q?", s)
				}
				errs = append(errs, fmt.Errorf("%s:%d: %s: unknown key %q (%s)", p.file, k.Line, displayPath(sub), k.Value, hint))
				continue
			}
			p.lines[sub] = k.Line
			errs = append(errs, p.check(v, ft, sub)...)
		}
		return errs
	case t.Kind() == reflect.Map:
		if node.Kind != yaml.MappingNode {
			return kindErr("a mapping")
		}
		var errs []error
		seen := map[string]int{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			sub := path + "." + k.Value
			if first, dup := seen[k.Value]; dup {
				errs = append(errs, fmt.Errorf("%s:%d: %s: duplicate key (first set at line %d)", p.file, k.Line, displayPath(sub), first))
				continue
			}
			seen[k.Value] = k.Line
			if k.Kind != yaml.ScalarNode {
				errs = append(errs, fmt.Errorf("%s:%d: %s: keys must be strings", p.file, k.Line, displayPath(path)))
				continue
			}
			p.lines[sub] = k.Line
			errs = append(errs, p.check(v, t.Elem(), sub)...)
		}
		return errs
	case t.Kind() == reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			return kindErr("a list")
		}
		var errs []error
		for i, v := range node.Content {
			errs = append(errs, p.check(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case t.Kind() == reflect.String:
		if node.Kind != yaml.ScalarNode {
			return kindErr("a string")
		}
	case t.Kind() == reflect.Int:
		if node.Kind != yaml.ScalarNode {
			return kindErr("an integer")
		}
		if _, err := strconv.Atoi(node.Value); err != nil {
			return []error{fmt.Errorf("%s:%d: %s: invalid integer %q", p.file, node.Line, displayPath(path), node.Value)}
		}
	case t.Kind() == reflect.Bool:
		if node.Kind != yaml.ScalarNode {
			return kindErr("true or false")
		}
		var b bool
		if err := node.Decode(&b); err != nil {
			return []error{fmt.Errorf("%s:%d: %s: invalid boolean %q (use true or false)", p.file, node.Line, displayPath(path), node.Value)}
		}
	}
	return nil
}

// collectFields lists the YAML keys of struct type t, descending into
// `yaml:",inline"` fields.
func collectFields(t reflect.Type, fields map[string]reflect.Type, names *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, fields, names)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
		*names = append(*names, name)
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func displayPath(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// parseDocument parses data into a single YAML document node.
func parseDocument(file string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml's syntax errors read "yaml: line N: ..."; keep them but name the file.
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			return nil, fmt.Errorf("%s:%s", file, rest)
		}
		return nil, fmt.Errorf("%s: %s", file, msg)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty", file)
	}
	return doc.Content[0], nil
}

// decodeStrict checks node against out's type, then decodes it.
func decodeStrict(file string, node *yaml.Node, out any) (*positions, error) {
	p := &positions{file: file, lines: map[string]int{}}
	if errs := p.check(node, reflect.TypeOf(out), ""); len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	if err := node.Decode(out); err != nil {
		return p, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// closest returns the name within edit distance 2 of key, if exactly one
// name is nearest.
func closest(key string, names []string) string {
	best, bestD, ties := "", 3, 0
	for _, n := range names {
		d := editDistance(key, n)
		switch {
		case d < bestD:
			best, bestD, ties = n, d, 0
		case d == bestD:
			ties++
		}
	}
	if ties > 0 {
		return ""
	}
	return best
}

// editDistance is the Damerau (optimal string alignment) distance.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
