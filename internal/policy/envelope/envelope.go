// Package envelope is a workspace's remediation safety envelope as
// configured: which planned actions an apply may perform and how many
// resources it may change (Envelope), its defaults and its validation.
// engine.Envelope is this Envelope (engine.Evaluate applies it to a
// run); config embeds it in a workspace's `remediation:` block, so the
// keys, defaults and checks are written once, here. It is a leaf: it
// imports no other internal package. It lives beside policy, below both
// config and the remediation folder (whose controller reads config), so
// that config may import it.
package envelope

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Actions an envelope can allow. They are planparse.Change.Action values of
// the plan's resource_changes, i.e. what the apply would do, not what the
// drift was: a resource deleted outside Terraform is drift "delete" and
// becomes a planned "create".
const (
	ActionUpdate  = "update"
	ActionCreate  = "create"
	ActionDelete  = "delete"
	ActionReplace = "replace"
)

// Defaults of an Envelope's zero fields.
const (
	DefaultMaxResources = 10
)

// DefaultAllowActions is what an empty Envelope.AllowActions means: only
// in-place updates.
func DefaultAllowActions() []string { return []string{ActionUpdate} }

// knownActions are the only values AllowActions may hold.
var knownActions = []string{ActionUpdate, ActionCreate, ActionDelete, ActionReplace}

// Envelope is the safety envelope of one workspace: what a remediation may
// do. Its zero value is the default: update only, at most 10 resources.
type Envelope struct {
	// AllowActions lists the planned actions a remediation may perform:
	// "update" (default), "create", "delete", "replace".
	//
	// "create" is its own entry, off by default: the only way drift yields
	// a planned create is a resource deleted outside Terraform, and
	// re-creating it makes a new object (new ID, new cost, maybe an empty
	// database) where a deletion by hand is often deliberate (a
	// decommission, an incident response). Reverting an attribute is not
	// in the same risk class, so re-creation must be asked for explicitly.
	AllowActions []string `yaml:"allow_actions"`
	// MaxResources caps the number of resources one remediation changes
	// (0: DefaultMaxResources).
	MaxResources int `yaml:"max_resources"`
}

// WithDefaults returns e with its zero fields filled in.
func (e Envelope) WithDefaults() Envelope {
	if len(e.AllowActions) == 0 {
		e.AllowActions = DefaultAllowActions()
	}
	if e.MaxResources <= 0 {
		e.MaxResources = DefaultMaxResources
	}
	return e
}

// Validate checks the envelope as configured; the messages name the
// remediation keys.
func (e Envelope) Validate() error {
	var errs []error
	for _, a := range e.AllowActions {
		if !slices.Contains(knownActions, a) {
			errs = append(errs, fmt.Errorf("allow_actions: unknown action %q (allowed: %s)", a, strings.Join(knownActions, ", ")))
		}
	}
	if e.MaxResources < 0 {
		errs = append(errs, fmt.Errorf("max_resources: must not be negative, got %d", e.MaxResources))
	}
	return errors.Join(errs...)
}
