package planparse

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
)

func TestAttributePaths(t *testing.T) {
	type tc struct {
		before, after, unknown, bsen, asen string
		want                               []string
	}
	cases := map[string]tc{
		"equal bytes":         {before: `{"a":1}`, after: `{"a":1}`},
		"scalar change":       {before: `{"a":1,"b":"x"}`, after: `{"a":2,"b":"x"}`, want: []string{"a"}},
		"added and removed":   {before: `{"a":"x"}`, after: `{"b":"y"}`, want: []string{"a", "b"}},
		"white space ignored": {before: `{ "a" : [ 1 , 2 ] }`, after: `{"a":[1,2]}`},
		"null vs empty map":   {before: `{"labels":null,"x":1}`, after: `{"labels":{},"x":1}`},
		"null vs empty list":  {before: `{"l":null}`, after: `{"l":[]}`},
		"null vs empty str":   {before: `{"s":null}`, after: `{"s":""}`},
		"missing vs null":     {before: `{}`, after: `{"k":null,"m":{},"l":[]}`},
		"nested nulls":        {before: `{"meta":{"annotations":null,"labels":{"a":null}}}`, after: `{"meta":{}}`},
		"null vs value":       {before: `{"s":null}`, after: `{"s":"v"}`, want: []string{"s"}},
		"false is not empty":  {before: `{"b":null}`, after: `{"b":false}`, want: []string{"b"}},
		"zero is not empty":   {before: `{"n":0}`, after: `{}`, want: []string{"n"}},
		"number forms":        {before: `{"n":1,"m":150}`, after: `{"n":1.0,"m":1.5e2}`},
		"string escapes":      {before: `{"s":"a/b\u00e9"}`, after: `{"s":"a\/bé"}`},
		"type change":         {before: `{"v":"1"}`, after: `{"v":1}`, want: []string{"v"}},
		"map vs list":         {before: `{"v":{"a":1}}`, after: `{"v":[1]}`, want: []string{"v"}},
		"nested map keys":     {before: `{"tags":{"Name":"a","k.x":"1","team":"t"}}`, after: `{"tags":{"Name":"b","k.x":"2","team":"t"}}`, want: []string{"tags.Name", `tags["k.x"]`}},
		"odd keys":            {before: `{"m":{"":1,"9lives":1,"has space":1,"a-b_c":1,"quo\"te":1}}`, after: `{"m":{}}`, want: []string{"m.a-b_c", `m[""]`, `m["9lives"]`, `m["has space"]`, `m["quo\"te"]`}},
		"escaped key matches": {before: `{"m":{"\u0041":1}}`, after: `{"m":{"A":1}}`},
		"list index":          {before: `{"l":["a","b","c"]}`, after: `{"l":["a","x"]}`, want: []string{"l[1]", "l[2]"}},
		"list of blocks":      {before: `{"rule":[{"port":80,"cidr":["a"]}]}`, after: `{"rule":[{"port":80,"cidr":["b"]}]}`, want: []string{"rule[0].cidr[0]"}},
		"big map": {
			before: `{"m":{` + bigMap(100, "") + `}}`, after: `{"m":{` + bigMap(100, "k42") + `}}`,
			want: []string{"m.k42"},
		},
		"unknown leaves": {
			before: `{"id":"i-1","a":1}`, after: `{"a":2}`, unknown: `{"id":true,"arn":true,"tags":{},"l":[false,true],"b":{"c":true}}`,
			want: []string{"a", "arn", "b.c", "id", "l[1]"},
		},
		"unknown false": {before: `{"a":1}`, after: `{"a":1}`, unknown: `{"a":false}`},
		// Sensitivity: report the marked path only, never what is below.
		"sensitive string": {
			before: `{"password":"hunter2","x":1}`, after: `{"password":"hunter3","x":1}`,
			bsen: `{"password":true}`, asen: `{"password":true}`, want: []string{"password"},
		},
		"sensitive unchanged": {
			before: `{"password":"hunter2","x":1}`, after: `{"password":"hunter2","x":2}`,
			bsen: `{"password":true}`, asen: `{"password":true}`, want: []string{"x"},
		},
		"sensitive map keys hidden": {
			before: `{"secrets":{"db-canary-key":"v1"}}`, after: `{"secrets":{"other-canary-key":"v1"}}`,
			asen: `{"secrets":true}`, want: []string{"secrets"},
		},
		"sensitive only before": {
			before: `{"s":{"k1":"a"}}`, after: `{"s":{"k2":"a"}}`, bsen: `{"s":true}`, asen: `{}`, want: []string{"s"},
		},
		"sensitive nested": {
			before: `{"conf":{"name":"a","token":{"t1":"x"}}}`, after: `{"conf":{"name":"b","token":{"t2":"y"}}}`,
			bsen: `{"conf":{"token":true}}`, asen: `{"conf":{"token":true}}`, want: []string{"conf.name", "conf.token"},
		},
		"sensitive list element": {
			before: `{"l":[{"k":"a"},{"secret-k":"b"}]}`, after: `{"l":[{"k":"a"},{"secret-j":"c"}]}`,
			asen: `{"l":[false,true]}`, want: []string{"l[1]"},
		},
		"sensitive null normalised": {before: `{"s":null}`, after: `{"s":{}}`, asen: `{"s":true}`},
		"unknown under sensitive": {
			before: `{"s":{"a":"1"}}`, after: `{"s":{"a":"1"}}`, unknown: `{"s":{"secret-key":true}}`,
			asen: `{"s":true}`, want: []string{"s"},
		},
		"marker shapes tolerated": {before: `{"a":1}`, after: `{"a":2}`, bsen: `false`, asen: `[true]`, unknown: `true`, want: []string{"a"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := func(s string) []byte {
				if s == "" {
					return nil
				}
				return []byte(s)
			}
			got := attributePaths(b(c.before), b(c.after), b(c.unknown), b(c.bsen), b(c.asen), true)
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("attributePaths mismatch (-want +got):\n%s", diff)
			}
			for _, p := range got {
				require.NotContains(t, p, "canary", "a key below a sensitive value leaked")
			}
		})
	}
}

func bigMap(n int, changed string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		k := "k" + itoa(i)
		v := "1"
		if k == changed {
			v = "2"
		}
		b.WriteString(`"` + k + `":` + v)
	}
	return b.String()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestEqualNorm(t *testing.T) {
	equal := [][2]string{
		{`null`, `{}`}, {`null`, `[]`}, {`""`, `null`}, {`""`, `{}`}, {`{"a":[]}`, `{}`},
		{`[null]`, `[]`}, {`1e2`, `100`}, {`-0`, `0`}, {`"\n"`, `"\u000a"`}, {`"\ud83d\ude00"`, `"😀"`},
	}
	for _, p := range equal {
		require.True(t, equalNorm([]byte(p[0]), []byte(p[1]), 0), "%s == %s", p[0], p[1])
		require.True(t, equalNorm([]byte(p[1]), []byte(p[0]), 0), "%s == %s", p[1], p[0])
	}
	unequal := [][2]string{
		{`null`, `false`}, {`0`, `null`}, {`{}`, `[]`}, {`{"a":{}}`, `{"a":[]}`}, {`"a"`, `"b"`}, {`[1]`, `[1,2]`}, {`{"a":1}`, `{"a":"1"}`}, {`1`, `1.0000000000000000001`},
	}
	for _, p := range unequal {
		require.False(t, equalNorm([]byte(p[0]), []byte(p[1]), 0), "%s != %s", p[0], p[1])
		require.False(t, equalNorm([]byte(p[1]), []byte(p[0]), 0), "%s != %s", p[1], p[0])
	}
}

func TestUnquote(t *testing.T) {
	cases := map[string]string{
		`plain`:         "plain",
		`a\"b\\c\/d`:    `a"b\c/d`,
		`\b\f\n\r\t`:    "\b\f\n\r\t",
		`\u00e9\u20ac`:  "é€",
		`\ud83d\ude00`:  "😀",
		`\ud83d`:        "\uFFFD",
		`\ud83dx`:       "\uFFFDx",
		`\u12`:          "u12", // malformed, never produced by the scanner
		`trailing\`:     `trailing\`,
		`\ude00\ud83d`:  "\uFFFD\uFFFD",
		`\ud83d\u0041`:  "\uFFFDA",
		`x\ud83d\ude00`: "x😀",
	}
	for in, want := range cases {
		require.Equal(t, want, string(unquote([]byte(in))), in)
	}
}

// Pathological nesting is cut off at maxPathDepth, in linear time.
func TestAttributePathsDeep(t *testing.T) {
	const n = 5000
	nest := func(leaf string) []byte {
		return []byte(`{"a":` + strings.Repeat("[", n) + leaf + strings.Repeat("]", n) + `}`)
	}
	got := attributePaths(nest("1"), nest("2"), nest("true"), nil, nil, true)
	want := "a" + strings.Repeat("[0]", maxPathDepth-1)
	require.Equal(t, []string{want}, got)
	require.True(t, equalNorm(nest("null"), nest("null"), 0))
	require.False(t, equalNorm(nest("1"), nest("2"), 0))
}

func TestDropDescendants(t *testing.T) {
	got := dropDescendants([]string{"output", "output-x", "output.app", "output[0]", "tags", "tags_all.env", `tags["a.b"]`})
	want := []string{"output", "output-x", "tags", "tags_all.env"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
