package apiclient

import (
	"bufio"
	"io"
	"strings"
	"unicode/utf8"
)

// Printable returns s safe to write to a terminal: a log line holds
// whatever Terraform, a provider or a check's error_message printed, and
// an escape sequence in it could recolour, retitle, rewrite or hide what
// the operator reads (or, on some terminals, answer with input). Removed:
// ESC and the sequence it starts (CSI "ESC [ ... final", OSC "ESC ] ...
// BEL" or "... ESC \", the DCS, SOS, PM and APC strings, and the
// two-character ones), every other C0 control (carriage return and
// backspace among them) but newline and tab, DEL, and the C1 controls
// U+0080 to U+009F. A byte that is not UTF-8 becomes U+FFFD: a terminal
// that is not in UTF-8 may read it as a C1 control.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escapeLen is the length of the escape sequence s starts with (s[0] is
// ESC); an unterminated one runs to the end of s.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte.
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
			if s[i] < 0x20 || s[i] > 0x3f {
				return i // malformed: stop before what is not part of it
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_': // strings: up to BEL (OSC) or ST (ESC \).
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	// ESC, intermediates (0x20-0x2f), a final byte.
	i := 1
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// copyPrintable copies r to w line by line, each made Printable.
func copyPrintable(w io.Writer, r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if _, werr := io.WriteString(w, Printable(line)); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
