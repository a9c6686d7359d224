package pattern

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"kubernetes_*", "kubernetes_config_map", true},
		{"kubernetes_*", "kubernetes_", true},
		{"kubernetes_*", "my_kubernetes_thing", false},
		{"helm_release", "helm_release", true},
		{"helm_release", "helm_releases", false},
		{"helm_release", "xhelm_release", false},
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", `module.a["x.y"].aws_instance.b[0]`, true},
		{"module.*.aws_instance.*", `module.app["k.x"].aws_instance.web[3]`, true},
		{"aws_instance.web[*]", "aws_instance.web[12]", false}, // [*] is a class of '*'
		{`aws_instance.web\[*\]`, "aws_instance.web[12]", true},
		{`tags["*"]`, `tags["k.x"]`, false}, // ["*"] is a class of '"' and '*'
		{`tags\["*"\]`, `tags["k.x"]`, true},
		{"tags.*", "tags.Name", true},
		{"tags*", "tags", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a?c", "aéc", true}, // ? is one character, not one byte
		{"[abc]x", "bx", true},
		{"[abc]x", "dx", false},
		{"[a-c]", "b", true},
		{"[!a-c]", "b", false},
		{"[^a-c]", "d", true},
		{"[]]", "]", true},
		{"[!]]", "a", true},
		{"[a-]", "-", true},
		{`[\]]`, "]", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"*a*b*c*", "xxaxxbxxcxx", true},
		{"*a*b*c*", "xxaxxcxxbxx", false},
		{"a**b", "ab", true},
		{"*aaa", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", false},
	}
	for _, c := range cases {
		g, err := Compile(c.pattern)
		require.NoError(t, err, c.pattern)
		require.Equal(t, c.want, g.Match(c.s), "%q.Match(%q)", c.pattern, c.s)
		require.Equal(t, c.pattern, g.String())
	}
}

func TestCompileGlobErrors(t *testing.T) {
	cases := map[string]string{
		"aws_instance.[a": `unclosed '[' at offset 13 (use \[ for a literal bracket)`,
		"[":               `unclosed '[' at offset 0 (use \[ for a literal bracket)`,
		"[]":              `unclosed '[' at offset 0 (use \[ for a literal bracket)`,
		"[!":              `unclosed '[' at offset 0 (use \[ for a literal bracket)`,
		`[a\`:             `unclosed '[' at offset 0 (use \[ for a literal bracket)`,
		"[z-a]":           `reversed range z-a in '[' at offset 0`,
		`abc\`:            `trailing backslash at offset 3 escapes nothing`,
		"\xff":            `pattern is not valid UTF-8`,
	}
	for pattern, want := range cases {
		_, err := Compile(pattern)
		require.EqualError(t, err, want, pattern)
	}
	require.Panics(t, func() { MustCompile("[") })
}

func TestGlobText(t *testing.T) {
	var cfg struct {
		Forbidden []Glob `yaml:"forbidden"`
	}
	require.NoError(t, yaml.Unmarshal([]byte("forbidden: [\"kubernetes_*\", helm_release]"), &cfg))
	require.Len(t, cfg.Forbidden, 2)
	require.True(t, cfg.Forbidden[0].Match("kubernetes_secret"))
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	require.Equal(t, "forbidden:\n    - kubernetes_*\n    - helm_release\n", string(out))
	require.ErrorContains(t, yaml.Unmarshal([]byte(`forbidden: ["[x"]`), &cfg), "unclosed '['")
}

// refMatch is an obviously correct (exponential) reference matcher over
// compiled tokens.
func refMatch(toks []token, s []rune) bool {
	if len(toks) == 0 {
		return len(s) == 0
	}
	t := toks[0]
	if t.kind == tokStar {
		for i := 0; i <= len(s); i++ {
			if refMatch(toks[1:], s[i:]) {
				return true
			}
		}
		return false
	}
	if len(s) == 0 {
		return false
	}
	switch t.kind {
	case tokLiteral:
		if t.r != s[0] {
			return false
		}
	case tokClass:
		if !t.matches(s[0]) {
			return false
		}
	}
	return refMatch(toks[1:], s[1:])
}

func FuzzGlob(f *testing.F) {
	f.Add("kubernetes_*", "kubernetes_config_map")
	f.Add("*a?b[c-e]*", "xxazbdyy")
	f.Add(`\[[!]]*`, "[x]")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		g, err := Compile(pattern)
		if err != nil {
			return
		}
		if len(pattern) > 24 || len(s) > 48 || !utf8.ValidString(s) {
			g.Match(s) // must not panic; too big for the reference
			return
		}
		if got, want := g.Match(s), refMatch(g.toks, []rune(s)); got != want {
			t.Fatalf("%q.Match(%q) = %v, reference %v", pattern, s, got, want)
		}
	})
}
