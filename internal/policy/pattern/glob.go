package pattern

import (
	"fmt"
	"unicode/utf8"
)

// Glob is a compiled shell-style pattern matched against a whole string
// (anchored at both ends):
//
//	syntax   matches
//	*        any run of characters, including none and '.', '[' and '"'
//	?        exactly one character
//	[abc]    one character of the set; ranges as in [a-z]; [!abc] and
//	         [^abc] negate; a ']' first in the set is literal
//	\c       the character c literally (also inside [...])
//
// Characters are Unicode code points. The zero Glob matches only "". To
// match an attribute path with a map key, escape the bracket:
// tags\["k.x"\] or tags\[*\].
type Glob struct {
	pattern string
	toks    []token
}

type tokenKind uint8

const (
	tokLiteral tokenKind = iota
	tokAny               // ?
	tokStar              // *
	tokClass             // [...]
)

type token struct {
	kind   tokenKind
	r      rune      // tokLiteral
	negate bool      // tokClass
	ranges [][2]rune // tokClass: inclusive ranges
}

// Compile compiles pattern. Malformed patterns (an unclosed '[', an
// empty set, a reversed range, a trailing backslash) are errors that say
// where the problem is; the pattern itself is left for the caller to quote.
func Compile(pattern string) (Glob, error) {
	g := Glob{pattern: pattern}
	if !utf8.ValidString(pattern) {
		return Glob{}, fmt.Errorf("pattern is not valid UTF-8")
	}
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			// Runs of stars are one star.
			if n := len(g.toks); n == 0 || g.toks[n-1].kind != tokStar {
				g.toks = append(g.toks, token{kind: tokStar})
			}
		case '?':
			g.toks = append(g.toks, token{kind: tokAny})
		case '\\':
			if i+1 >= len(rs) {
				return Glob{}, fmt.Errorf("trailing backslash at offset %d escapes nothing", i)
			}
			i++
			g.toks = append(g.toks, token{kind: tokLiteral, r: rs[i]})
		case '[':
			tok, next, err := compileClass(rs, i)
			if err != nil {
				return Glob{}, err
			}
			g.toks = append(g.toks, tok)
			i = next
		default:
			g.toks = append(g.toks, token{kind: tokLiteral, r: c})
		}
	}
	return g, nil
}

// compileClass compiles the set starting at rs[start] == '[' and returns the
// index of its closing ']'.
func compileClass(rs []rune, start int) (token, int, error) {
	tok := token{kind: tokClass}
	i := start + 1
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		tok.negate = true
		i++
	}
	first := true
	for {
		if i >= len(rs) {
			return token{}, 0, fmt.Errorf("unclosed '[' at offset %d (use \\[ for a literal bracket)", start)
		}
		if rs[i] == ']' && !first {
			break
		}
		first = false
		lo, err := classChar(rs, &i, start)
		if err != nil {
			return token{}, 0, err
		}
		hi := lo
		if i+1 < len(rs) && rs[i] == '-' && rs[i+1] != ']' {
			i++
			if hi, err = classChar(rs, &i, start); err != nil {
				return token{}, 0, err
			}
			if hi < lo {
				return token{}, 0, fmt.Errorf("reversed range %c-%c in '[' at offset %d", lo, hi, start)
			}
		}
		tok.ranges = append(tok.ranges, [2]rune{lo, hi})
	}
	return tok, i, nil
}

// classChar reads one (possibly escaped) character of a set at *i.
func classChar(rs []rune, i *int, start int) (rune, error) {
	c := rs[*i]
	if c == '\\' {
		if *i+1 >= len(rs) {
			return 0, fmt.Errorf("unclosed '[' at offset %d (use \\[ for a literal bracket)", start)
		}
		*i++
		c = rs[*i]
	}
	*i++
	return c, nil
}

// MustCompile is Compile for patterns known to be valid (tests,
// built-in defaults); it panics on a malformed pattern.
func MustCompile(pattern string) Glob {
	g, err := Compile(pattern)
	if err != nil {
		panic(fmt.Sprintf("policy: glob %q: %v", pattern, err))
	}
	return g
}

// String returns the source pattern.
func (g Glob) String() string { return g.pattern }

// MarshalText returns the source pattern.
func (g Glob) MarshalText() ([]byte, error) { return []byte(g.pattern), nil }

// UnmarshalText compiles a pattern, so a Glob can be a config field.
func (g *Glob) UnmarshalText(b []byte) error {
	c, err := Compile(string(b))
	if err != nil {
		return err
	}
	*g = c
	return nil
}

// Match reports whether the whole of s matches the pattern.
func (g Glob) Match(s string) bool {
	// Iterative matching with one backtrack point (the last star): linear
	// in len(s) per star, never exponential.
	toks := g.toks
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for si < len(s) {
		r, size := utf8.DecodeRuneInString(s[si:])
		if ti < len(toks) {
			t := &toks[ti]
			switch t.kind {
			case tokStar:
				starTi, starSi = ti, si
				ti++
				continue
			case tokAny:
				ti++
				si += size
				continue
			case tokLiteral:
				if t.r == r {
					ti++
					si += size
					continue
				}
			case tokClass:
				if t.matches(r) {
					ti++
					si += size
					continue
				}
			}
		}
		if starTi < 0 {
			return false
		}
		// Let the last star swallow one more character and retry.
		_, size = utf8.DecodeRuneInString(s[starSi:])
		starSi += size
		ti, si = starTi+1, starSi
	}
	for ti < len(toks) && toks[ti].kind == tokStar {
		ti++
	}
	return ti == len(toks)
}

func (t *token) matches(r rune) bool {
	in := false
	for _, rg := range t.ranges {
		if r >= rg[0] && r <= rg[1] {
			in = true
			break
		}
	}
	return in != t.negate
}
