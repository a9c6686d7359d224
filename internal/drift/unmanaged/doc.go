// Package unmanaged is the pure comparison behind scans: the resources a
// scan's `terraform query` listed (drift.Listed) against the managed
// instances of every workspace's state (drift.Managed, from each
// workspace's last check). A listed resource no state holds is an
// unmanaged finding; one two or more states hold is a managed_twice
// finding naming each workspace and address (Compare). A state instance
// holds a listed resource when type and resource identity are equal, or,
// for a state written before resource identities, when its id is one of
// the identity's values (Holds). Ignore rules (Rule: matchers of the type and
// of identity values or the display name, which the caller compiles)
// mark findings ignored.
//
// Findings carry the type, an address built from the identity
// (TYPE[NAME="VALUE", ...]), the display name as Detail and the holders:
// never an attribute value, as resource identities name objects and hold
// no secret.
//
// It imports drift only; the pipeline calls it with
// the fleet its caller gathered (internal/pipeline).
package unmanaged
