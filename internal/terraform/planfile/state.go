package planfile

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// stateResource is one entry of a version 4 state's resources: only what
// an address needs. The decoder skips every other field (attributes,
// private data, dependencies) without keeping it.
type stateResource struct {
	Module    string          `json:"module"`
	Mode      string          `json:"mode"`
	Type      string          `json:"type"`
	Name      string          `json:"name"`
	Instances []stateInstance `json:"instances"`
}

type stateInstance struct {
	IndexKey json.RawMessage `json:"index_key"`
	Deposed  json.RawMessage `json:"deposed"`
	// Identity is the instance's resource identity (Terraform 1.12 and
	// later), and Attributes.ID its id: what a scan compares. No other
	// attribute is decoded.
	Identity   json.RawMessage `json:"identity"`
	Attributes struct {
		ID json.RawMessage `json:"id"`
	} `json:"attributes"`
	Sensitive []json.RawMessage `json:"sensitive_attributes"`
}

// id is the instance's id attribute when it is a string Terraform does not
// hold sensitive.
func (inst stateInstance) id() string {
	var id string
	if json.Unmarshal(inst.Attributes.ID, &id) != nil {
		return ""
	}
	for _, p := range inst.Sensitive {
		var steps []struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(p, &steps) == nil && len(steps) == 1 && steps[0].Type == "get_attr" && string(steps[0].Value) == `"id"` {
			return ""
		}
	}
	return id
}

// readState reads the tfstate member, streaming: one resource entry is
// decoded at a time. Every instance is seen in state; with cleanPlan,
// every current (not deposed) managed instance is also a planned value,
// since on a clean plan each is a no-op change.
func readState(f *zip.File, limit int64, c *collector, cleanPlan bool) error {
	rc, err := openMember(f, limit)
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	var (
		version    string
		encrypted  bool
		sawVersion bool
		resources  []stateResource
	)
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return err
		}
		switch key {
		case "version":
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return safeJSONError(dec, err)
			}
			sawVersion, version = true, string(v)
			if version != "4" {
				return unsupportedVersion(version)
			}
		case "encrypted_data":
			// OpenTofu's encrypted state envelope.
			encrypted = true
			if err := skipValue(dec); err != nil {
				return err
			}
		case "resources":
			if err := expectDelim(dec, '['); err != nil {
				return err
			}
			for i := 0; dec.More(); i++ {
				var r stateResource
				if err := dec.Decode(&r); err != nil {
					return fmt.Errorf("resource %d: %w", i, safeJSONError(dec, err))
				}
				if err := checkResource(r); err != nil {
					return fmt.Errorf("resource %d: %w", i, err)
				}
				resources = append(resources, r)
			}
			if err := expectDelim(dec, ']'); err != nil {
				return err
			}
		default:
			if err := skipValue(dec); err != nil {
				return err
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return errors.New("unexpected data after the state object")
		}
		return safeJSONError(dec, err)
	}
	switch {
	case encrypted:
		return errors.New("state is encrypted (OpenTofu state encryption)")
	case !sawVersion:
		return errors.New("state has no version")
	}
	for i, r := range resources {
		if err := addStateResource(c, r, cleanPlan); err != nil {
			return fmt.Errorf("resource %d: %w", i, err)
		}
	}
	return nil
}

func unsupportedVersion(v string) error {
	if _, err := strconv.Atoi(v); err == nil && len(v) < 10 {
		return fmt.Errorf("unsupported state version %s (want 4)", v)
	}
	return errors.New("unsupported state version (want 4)")
}

// checkResource validates the fields an address is made of. Failures do
// not quote them: a corrupted state could have anything there.
func checkResource(r stateResource) error {
	if r.Mode != modeManaged && r.Mode != modeData {
		return errors.New("unknown resource mode")
	}
	if !validName(r.Type) || !validName(r.Name) {
		return errors.New("invalid resource type or name")
	}
	if r.Module != "" && !strings.HasPrefix(r.Module, "module.") {
		return errors.New("invalid module address")
	}
	return nil
}

// validName reports whether s is a resource type or name as the state
// format allows: a non-empty identifier without dots or brackets.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

func addStateResource(c *collector, r stateResource, cleanPlan bool) error {
	base := resourceAddr(r.Mode, r.Type, r.Name)
	if r.Module != "" {
		base = r.Module + "." + base
	}
	for _, inst := range r.Instances {
		key, err := instanceKey(inst.IndexKey)
		if err != nil {
			return err
		}
		addr := base + key
		c.add(addr, r.Mode, r.Type, drift.SeenInState)
		if r.Mode == modeManaged && isNull(inst.Deposed) {
			c.managed = append(c.managed, drift.Managed{Address: addr, Type: r.Type, ID: inst.id(), Identity: drift.IdentityOf(inst.Identity)})
			if cleanPlan {
				c.add(addr, r.Mode, r.Type, drift.SeenInPlanned)
			}
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// instanceKey formats a state index_key as Terraform prints it in an
// address: "" for none, [N] for a number, ["KEY"] (HCL-quoted) for a string.
// Like Terraform, it truncates a fractional number.
func instanceKey(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errors.New("invalid index_key")
		}
		return "[" + hclQuoted(s) + "]", nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return "", errors.New("index_key is neither a number nor a string")
	}
	return fmt.Sprintf("[%d]", int(f)), nil
}

// hclQuoted quotes s as Terraform's addrs.StringKey.String does (HCL's
// quoted-template syntax): backslash escapes for \n, \r, \t, " and \,
// doubled $ and % before {, and \uXXXX or \UXXXXXXXX for anything not
// printable.
func hclQuoted(s string) string {
	if s == "" {
		return `""`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '$', '%':
			b.WriteRune(r)
			if rest := s[i+1:]; rest != "" && rest[0] == '{' {
				b.WriteRune(r)
			}
		default:
			switch {
			case unicode.IsPrint(r):
				b.WriteRune(r)
			case r < 1<<16:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return safeJSONError(dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("malformed state: expected %q at byte %d", string(want), dec.InputOffset())
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", safeJSONError(dec, err)
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("malformed state: expected an object key at byte %d", dec.InputOffset())
	}
	return k, nil
}

// skipValue skips one JSON value token by token, so that nothing it holds
// (outputs, check results) is kept.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return safeJSONError(dec, err)
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// safeJSONError turns a decoding error into one that names a position
// only: encoding/json's messages can quote the input (a number literal, an
// unexpected character), and the state holds secrets.
func safeJSONError(dec *json.Decoder, err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, errTooLarge):
		return err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed state: truncated JSON")
	case errors.As(err, &syn):
		return fmt.Errorf("malformed state: invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("malformed state: unexpected JSON type for %s at byte %d", typ.Field, typ.Offset)
	case errors.Is(err, zip.ErrChecksum), errors.Is(err, zip.ErrFormat):
		return err
	}
	return fmt.Errorf("malformed state at byte %d", dec.InputOffset())
}
