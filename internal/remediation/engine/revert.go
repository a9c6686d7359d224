package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// notReverted reads a plan JSON document (`show -json PLANFILE`) and
// returns, for each drifted managed resource with a planned create, update
// or replace, the top-level attributes the apply would set to a value other
// than the one in the prior state (the last applied value). A pure drift
// revert sets every known attribute back to its prior value; a difference
// means the configuration changed too, and an apply would deploy that
// change under cover of the revert. planparse's value-free Plan cannot show
// this (the path sets of "revert" and "revert plus a new value" are equal),
// hence this second, value-aware reader.
//
// Values never leave this function: it keeps a SHA-256 per top-level
// attribute of canonical JSON and compares digests. Attributes unknown
// until apply (computed by the provider) are skipped. The document is
// streamed: it holds one resource_changes or resource_drift entry at a
// time and skips every other section token by token.
func notReverted(r io.Reader) (map[string][]string, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	prior := map[string]map[string][sha256.Size]byte{} // drift address -> attribute -> digest of before
	type planned struct {
		after   map[string][sha256.Size]byte
		unknown map[string]bool
	}
	changes := map[string]planned{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		switch key {
		case "resource_drift", "resource_changes":
			isDrift := key == "resource_drift"
			err = eachElement(dec, func() error {
				var c rawChange
				if err := dec.Decode(&c); err != nil {
					return err
				}
				if c.Mode != modeManaged || c.Deposed != "" {
					return nil
				}
				if isDrift {
					d, err := attributeDigests(c.Change.Before)
					if err != nil {
						return fmt.Errorf("%s: before: %w", c.Address, err)
					}
					if d != nil {
						prior[c.Address] = d
					}
					return nil
				}
				if !slices.Contains(c.Change.Actions, "create") && !slices.Contains(c.Change.Actions, "update") {
					return nil
				}
				d, err := attributeDigests(c.Change.After)
				if err != nil {
					return fmt.Errorf("%s: after: %w", c.Address, err)
				}
				u, err := unknownAttributes(c.Change.AfterUnknown)
				if err != nil {
					return fmt.Errorf("%s: after_unknown: %w", c.Address, err)
				}
				changes[c.Address] = planned{after: d, unknown: u}
				return nil
			})
		default:
			err = skipValue(dec)
		}
		if err != nil {
			return nil, fmt.Errorf("plan json: %s: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}

	out := map[string][]string{}
	for addr, c := range changes {
		p, ok := prior[addr]
		if !ok {
			continue // not drift: the envelope governs it
		}
		for k, d := range c.after {
			if c.unknown[k] {
				continue
			}
			if pd, ok := p[k]; !ok || pd != d {
				out[addr] = append(out[addr], k)
			}
		}
		slices.Sort(out[addr])
	}
	return out, nil
}

type rawChange struct {
	Address string `json:"address"`
	Mode    string `json:"mode"`
	Deposed string `json:"deposed"`
	Change  struct {
		Actions      []string        `json:"actions"`
		Before       json.RawMessage `json:"before"`
		After        json.RawMessage `json:"after"`
		AfterUnknown json.RawMessage `json:"after_unknown"`
	} `json:"change"`
}

// attributeDigests digests each top-level attribute of an object value; a
// null or absent value has none (nil).
func attributeDigests(raw json.RawMessage) (map[string][sha256.Size]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(raw, &attrs); err != nil {
		return nil, err
	}
	out := make(map[string][sha256.Size]byte, len(attrs))
	for k, v := range attrs {
		c, err := canonical(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = sha256.Sum256(c)
	}
	return out, nil
}

// canonical re-encodes a JSON value with sorted object keys, so equal
// values compare equal whatever their original layout.
func canonical(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// unknownAttributes returns the top-level attributes of after_unknown with
// a true leaf anywhere below them.
func unknownAttributes(raw json.RawMessage) (map[string]bool, error) {
	out := map[string]bool{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return out, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return out, nil
	}
	for k, sub := range m {
		if hasTrue(sub) {
			out[k] = true
		}
	}
	return out, nil
}

func hasTrue(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case map[string]any:
		for _, s := range v {
			if hasTrue(s) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(v, hasTrue)
	}
	return false
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("plan json: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("plan json: want %q, got %v", want, tok)
	}
	return nil
}

// eachElement calls fn for each element of the array at the decoder's
// position (fn decodes it); a null is an empty array.
func eachElement(dec *json.Decoder, fn func() error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("want an array, got %v", tok)
	}
	for dec.More() {
		if err := fn(); err != nil {
			return err
		}
	}
	_, err = dec.Token() // ']'
	return err
}

// skipValue skips one value token by token, holding no more than a token.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if strings.ContainsRune("{[", rune(d)) {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}
