package planparse

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// validate runs the streaming scanner as a pure validator over data.
func validate(data []byte) error {
	s := newScanner(bytes.NewReader(data))
	if err := s.skipValue(); err != nil {
		return err
	}
	if _, ok := s.peek(); ok {
		return s.errorf("unexpected data after top-level value")
	}
	return nil
}

var validitySeeds = []string{
	``, ` `, `0`, `-0`, `-01`, `1.5e+3`, `1E-2`, `.5`, `1.`, `+1`, `"a\u00e9\n"`, `"\x"`, "\"\x1f\"", "\"\xff\"",
	`true`, `nul`, `[1,2]`, `[1,]`, `{"a":1,"b":[{}]}`, `{"a" 1}`, `{,}`, `{"a":1,}`, `[]]`, `{} {}`,
	`[[[[[[[[[[]]]]]]]]]]`, `"\ud83d\ude00"`, `"\uD83D"`, `{"a":"b"}x`,
}

// The scanner accepts exactly what encoding/json accepts.
func FuzzValid(f *testing.F) {
	for _, s := range validitySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := validate(data)
		if want := json.Valid(data); want != (err == nil) {
			t.Fatalf("json.Valid = %v, scanner error = %v, input %q", want, err, data)
		}
	})
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	inputs := slices.Clone(validitySeeds)
	for _, data := range fixtures(t) {
		inputs = append(inputs, string(data))
	}
	for _, in := range inputs {
		err := validate([]byte(in))
		if want := json.Valid([]byte(in)); want != (err == nil) {
			t.Errorf("json.Valid = %v, scanner error = %v, input %q", want, err, in)
		}
	}
}

// Parse never panics, accepts only valid JSON, and never returns a plan
// together with an error.
func FuzzParse(f *testing.F) {
	for _, data := range fixtures(f) {
		f.Add(data)
	}
	f.Add([]byte(`{"format_version":"1.2","resource_changes":[{"address":"a.b","change":{"actions":["update"],` +
		`"before":{"m":{"k":1},"l":[1,{"x":null}]},"after":{"m":{"k":2},"l":[2]},"after_unknown":{"u":true},` +
		`"before_sensitive":{"m":true},"after_sensitive":{"l":[true]}}}]}`))
	f.Add([]byte(checksPlan))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data))
		if (p == nil) == (err == nil) {
			t.Fatalf("Parse returned plan %v and error %v", p != nil, err)
		}
		if err == nil && !json.Valid(data) {
			t.Fatalf("Parse accepted invalid JSON %q", data)
		}
	})
}

// The diff never panics on valid JSON, finds nothing between a value and
// itself, and agrees with equalNorm.
func FuzzAttributePaths(f *testing.F) {
	f.Add([]byte(`{"a":1,"m":{"k":null}}`), []byte(`{"a":2,"m":{}}`), []byte(`{"m":true}`))
	f.Add([]byte(`{"l":[1,2,{"x":"\u0041"}]}`), []byte(`{"l":[1,{"x":"A"}]}`), []byte(`{"l":[false,true]}`))
	f.Fuzz(func(t *testing.T, before, after, marker []byte) {
		if !json.Valid(before) || !json.Valid(after) || !json.Valid(marker) {
			return
		}
		if got := attributePaths(before, before, nil, nil, nil, false); len(got) != 0 {
			t.Fatalf("diff of %q with itself: %q", before, got)
		}
		got := attributePaths(before, after, marker, marker, nil, true)
		plain := attributePaths(before, after, nil, nil, nil, false)
		if equalNorm(before, after, 0) != equalNorm(after, before, 0) {
			t.Fatalf("equalNorm not symmetric for %q, %q", before, after)
		}
		if kind(before) == kObject && kind(after) == kObject && equalNorm(before, after, 0) != (len(plain) == 0) {
			t.Fatalf("equalNorm = %v but paths %q for %q, %q", equalNorm(before, after, 0), plain, before, after)
		}
		_ = got
	})
}
