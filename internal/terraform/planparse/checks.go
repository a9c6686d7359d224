package planparse

// The readers of a plan's checks, output changes and relevant attributes:
// what a plan says beside its resource changes.

import tfjson "github.com/hashicorp/terraform-json"

// readCheck reads one element of the top-level "checks" array and keeps
// its failing, erroring or unknown instances (or the object itself, when
// it lists no instance that is not passing).
func (p *parser) readCheck() error {
	s := p.s
	var obj Check
	var insts []Check
	err := s.iterObject(func(key []byte) error {
		var err error
		switch string(key) {
		case "address":
			obj.Address, obj.Kind, err = p.readCheckAddress()
		case "status":
			obj.Status, err = p.readInterned()
		case "instances":
			err = s.iterArray(func(int) error {
				var in Check
				err := s.iterObject(func(key []byte) error {
					var err error
					switch string(key) {
					case "address":
						in.Address, _, err = p.readCheckAddress()
					case "status":
						in.Status, err = p.readInterned()
					case "problems":
						in.Messages, err = p.readProblems()
					default:
						err = s.skipValue()
					}
					return err
				})
				if err == nil && in.Status != "" && in.Status != CheckPass {
					insts = append(insts, in)
				}
				return err
			})
		default:
			err = s.skipValue()
		}
		return err
	})
	if err != nil || obj.Status == "" || obj.Status == CheckPass {
		return err
	}
	if len(insts) == 0 {
		p.plan.Checks = append(p.plan.Checks, obj)
		return nil
	}
	for _, in := range insts {
		if in.Address == "" {
			in.Address = obj.Address
		}
		in.Kind = obj.Kind
		p.plan.Checks = append(p.plan.Checks, in)
	}
	return nil
}

// readCheckAddress reads a check's address object: its to_display and
// kind.
func (p *parser) readCheckAddress() (display, kind string, err error) {
	s := p.s
	err = s.iterObject(func(key []byte) error {
		var err error
		switch string(key) {
		case "to_display":
			display, err = s.readStringOrNull()
		case "kind":
			kind, err = p.readInterned()
		default:
			err = s.skipValue()
		}
		return err
	})
	return display, kind, err
}

// readProblems reads an instance's problems: their messages.
func (p *parser) readProblems() ([]string, error) {
	s := p.s
	var msgs []string
	err := s.iterArray(func(int) error {
		return s.iterObject(func(key []byte) error {
			if string(key) != "message" {
				return s.skipValue()
			}
			m, err := s.readStringOrNull()
			if err == nil && m != "" {
				msgs = append(msgs, m)
			}
			return err
		})
	})
	return msgs, err
}

func (p *parser) readOutputChanges() error {
	s := p.s
	return s.iterObject(func(key []byte) error {
		name := string(key)
		var actions []string
		err := s.iterObject(func(key []byte) error {
			if string(key) != "actions" {
				return s.skipValue()
			}
			return s.iterArray(func(int) error {
				a, err := p.readInterned()
				actions = append(actions, a)
				return err
			})
		})
		if err != nil {
			return err
		}
		if len(actions) > 0 && (len(actions) != 1 || actions[0] != string(tfjson.ActionNoop)) {
			p.plan.OutputChanges = append(p.plan.OutputChanges, name)
		}
		return nil
	})
}

func (p *parser) readRelevantAttribute() error {
	s := p.s
	var (
		addr string
		path []byte
	)
	err := s.iterObject(func(key []byte) error {
		switch string(key) {
		case "resource":
			var err error
			addr, err = s.readStringOrNull()
			return err
		case "attribute":
			return s.iterArray(func(int) error {
				step, isNum, ok, err := s.readIndexStep()
				switch {
				case err != nil || !ok:
				case isNum:
					path = append(append(append(path, '['), step...), ']')
				default:
					path = appendKey(path, step)
				}
				return err
			})
		}
		return s.skipValue()
	})
	if err != nil || addr == "" {
		return err
	}
	paths := p.plan.RelevantAttributes[addr]
	if paths == nil {
		paths = []string{}
	}
	if len(path) > 0 {
		paths = append(paths, string(path))
	}
	p.plan.RelevantAttributes[addr] = paths
	return nil
}
