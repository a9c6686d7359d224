package planfile

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The tfplan member is a protobuf message (package tfplan). Terraform and
// OpenTofu number the fields read here the same; each adds fields of its
// own, which are skipped. Only the fields below are read.
const (
	planVersion         = 1
	planOutputChanges   = 4
	planResourceChanges = 3
	planTFVersion       = 14
	planRelevantAttrs   = 15
	planUIMode          = 17
	planResourceDrift   = 18
	planCheckResults    = 19
	planErrored         = 20
	planDeferred        = 27 // Terraform: deferred_changes
	// Terraform 1.14: action_invocations, deferred_action_invocations.
	planActions         = 30
	planDeferredActions = 31

	ricDeposed  = 7
	ricProvider = 8
	ricChange   = 9
	ricReason   = 12
	ricAddr     = 13
	ricPrevAddr = 14

	changeAction     = 1
	changeValues     = 2
	changeBeforeSens = 3
	changeAfterSens  = 4
	changeImporting  = 5

	outputName   = 1
	outputChange = 2

	checkStatus = 3

	relevantResource = 1
	relevantAttr     = 2

	pathSteps      = 1
	stepAttribute  = 1
	stepElementKey = 2

	dynamicMsgpack = 1
)

// tfplanVersion is the tfplan format version both tools write today; any
// other is refused (callers then run show -json).
const tfplanVersion = 3

// UI modes (tfplan.Mode).
const uiModeRefreshOnly = 2

// Actions (tfplan.Action). Terraform's 9 and OpenTofu's 10 are each the
// tool's own (the other leaves its number unused).
const (
	actionNoop             = 0
	actionCreate           = 1
	actionRead             = 2
	actionUpdate           = 3
	actionDelete           = 5
	actionDeleteThenCreate = 6
	actionCreateThenDelete = 7
	actionForget           = 8
	actionCreateThenForget = 9  // Terraform
	actionForgetThenCreate = 10 // OpenTofu 1.12: a replace under lifecycle destroy = false
)

// Check statuses (tfplan.CheckResults.Status).
const checkPass = 1

// rawPlan is what Decode reads of the tfplan member.
type rawPlan struct {
	version   uint64
	uiMode    uint64
	errored   bool
	tfVersion string
	changes   []rawChange
	drift     []rawChange
	outputs   []rawOutput
	relevant  []rawRelevant
	// checksNotPassing counts check results whose status is not pass.
	checksNotPassing int
	deferred         int
	// actions counts action invocations, planned or deferred.
	actions int
}

// rawChange is a ResourceInstanceChange with its Change.
type rawChange struct {
	addr, prevAddr, deposed string
	// provider is the provider configuration's address:
	// provider["registry.terraform.io/hashicorp/aws"], maybe with a
	// module path before it and an alias after it.
	provider string
	action   uint64
	reason   uint64
	// values are the msgpack values: [after] for create, [before] for
	// delete and no-op, [before, after] otherwise.
	values                [][]byte
	beforeSens, afterSens []rawPath
	importing             bool
}

type rawOutput struct {
	name   string
	action uint64
}

type rawRelevant struct {
	resource string
	path     rawPath
}

// rawPath is a tfplan.Path: each step an attribute name or an element key
// (msgpack of a string or a number).
type rawPath []rawStep

type rawStep struct {
	attr string
	key  []byte
	// isKey tells an element key from an attribute name.
	isKey bool
}

// errProto reports a malformed protobuf message; it never quotes content.
var errProto = errors.New("malformed tfplan member")

// fields calls fn for each field of the protobuf message b. For
// length-delimited fields v is the payload; for varints n is the value.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return errProto
		}
		b = b[l:]
		var (
			v []byte
			n uint64
		)
		switch typ {
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return errProto
		}
		b = b[l:]
		if err := fn(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}

// wantBytes and wantVarint check a known field's wire type.
func wantBytes(typ protowire.Type, num protowire.Number) error {
	if typ != protowire.BytesType {
		return fmt.Errorf("%w: field %d is not length-delimited", errProto, num)
	}
	return nil
}

func wantVarint(typ protowire.Type, num protowire.Number) error {
	if typ != protowire.VarintType {
		return fmt.Errorf("%w: field %d is not a varint", errProto, num)
	}
	return nil
}

func parsePlan(b []byte) (*rawPlan, error) {
	p := &rawPlan{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch num {
		case planVersion, planUIMode, planErrored:
			if err := wantVarint(typ, num); err != nil {
				return err
			}
			switch num {
			case planVersion:
				p.version = n
			case planUIMode:
				p.uiMode = n
			default:
				p.errored = n != 0
			}
		case planTFVersion:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			p.tfVersion = string(v)
		case planResourceChanges, planResourceDrift:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			c, err := parseResourceChange(v)
			if err != nil {
				return err
			}
			if num == planResourceChanges {
				p.changes = append(p.changes, c)
			} else {
				p.drift = append(p.drift, c)
			}
		case planOutputChanges:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			var o rawOutput
			err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				switch num {
				case outputName:
					o.name = string(v)
					return wantBytes(typ, num)
				case outputChange:
					if err := wantBytes(typ, num); err != nil {
						return err
					}
					return fields(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
						if num == changeAction {
							o.action = n
							return wantVarint(typ, num)
						}
						return nil
					})
				}
				return nil
			})
			if err != nil {
				return err
			}
			p.outputs = append(p.outputs, o)
		case planCheckResults:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			var status uint64
			err := fields(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
				if num == checkStatus {
					status = n
					return wantVarint(typ, num)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if status != checkPass {
				p.checksNotPassing++
			}
		case planRelevantAttrs:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			var r rawRelevant
			err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				var err error
				switch num {
				case relevantResource:
					r.resource = string(v)
					err = wantBytes(typ, num)
				case relevantAttr:
					if err = wantBytes(typ, num); err == nil {
						r.path, err = parsePath(v)
					}
				}
				return err
			})
			if err != nil {
				return err
			}
			p.relevant = append(p.relevant, r)
		case planDeferred:
			p.deferred++
		case planActions, planDeferredActions:
			p.actions++
		}
		return nil
	})
	return p, err
}

func parseResourceChange(b []byte) (rawChange, error) {
	var c rawChange
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch num {
		case ricAddr:
			c.addr = string(v)
			return wantBytes(typ, num)
		case ricPrevAddr:
			c.prevAddr = string(v)
			return wantBytes(typ, num)
		case ricDeposed:
			c.deposed = string(v)
			return wantBytes(typ, num)
		case ricProvider:
			c.provider = string(v)
			return wantBytes(typ, num)
		case ricReason:
			c.reason = n
			return wantVarint(typ, num)
		case ricChange:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			return parseChange(v, &c)
		}
		return nil
	})
	return c, err
}

func parseChange(b []byte, c *rawChange) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch num {
		case changeAction:
			c.action = n
			return wantVarint(typ, num)
		case changeValues:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			mp, err := dynamicValue(v)
			if err != nil {
				return err
			}
			c.values = append(c.values, mp)
		case changeBeforeSens, changeAfterSens:
			if err := wantBytes(typ, num); err != nil {
				return err
			}
			p, err := parsePath(v)
			if err != nil {
				return err
			}
			if num == changeBeforeSens {
				c.beforeSens = append(c.beforeSens, p)
			} else {
				c.afterSens = append(c.afterSens, p)
			}
		case changeImporting:
			c.importing = true
			return wantBytes(typ, num)
		}
		return nil
	})
}

// dynamicValue is a DynamicValue's msgpack payload; a value in any other
// serialization (none exists yet) is refused.
func dynamicValue(b []byte) ([]byte, error) {
	var mp []byte
	found := false
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num == dynamicMsgpack {
			mp, found = v, true
			return wantBytes(typ, num)
		}
		return nil
	})
	if err == nil && !found {
		err = errors.New("a value in a serialization other than msgpack")
	}
	return mp, err
}

func parsePath(b []byte) (rawPath, error) {
	var p rawPath
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != pathSteps {
			return nil
		}
		if err := wantBytes(typ, num); err != nil {
			return err
		}
		var s rawStep
		err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			switch num {
			case stepAttribute:
				s.attr = string(v)
				return wantBytes(typ, num)
			case stepElementKey:
				if err := wantBytes(typ, num); err != nil {
					return err
				}
				mp, err := dynamicValue(v)
				s.key, s.isKey = mp, true
				return err
			}
			return nil
		})
		p = append(p, s)
		return err
	})
	return p, err
}
