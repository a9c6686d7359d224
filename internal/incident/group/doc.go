// Package group groups drift findings across a fleet by cause, so that
// one cause is one incident and one page (issue #33): a provider upgrade
// that changes how an attribute is normalised drifts forty workspaces at
// once, and that is one group, not forty incidents.
//
// [Compute] takes the findings of every workspace (address, type, kind,
// changed attribute paths, the value-free shape of the change
// (drift.Finding.Shape, "tags_all: null → object"), the
// commit behind a pending change, when each was first seen) and each
// workspace's provider version changes since its last clean run
// ([ProviderChanges] compares two lock-file selections). Each finding
// joins at most one group, under the first of three causes that gathers
// enough members (Options: the least members and workspaces):
//
//   - the same provider moved from the same version to the same version,
//     and the same attributes changed the same way;
//   - the same commit behind pending changes;
//   - the same resource type and attribute set changing the same way,
//     first seen within one window.
//
// A [Group] has a stable ID (a hash of its cause and key, never of its
// members, so that members joining and leaving keep the same group), a
// title that says the cause ("hashicorp/aws 5.80.0 → 5.81.0: tags_all
// changed on 40 resources in 12 workspaces"), its members and when its
// members were first and last seen. Findings that join no group are
// returned as they came: they keep incidents of their own.
//
// It is pure: no I/O, no clock (times are the findings'). It imports only
// drift of driftwatch's packages. It is not wired yet (issue #33): the
// incident lifecycle, routing and the API will use it.
package group
