// Package planparse turns a Terraform/OpenTofu plan JSON document
// (`terraform show -json PLANFILE`) into a value-free Plan: resource
// addresses, types, actions and changed attribute paths, kept apart for
// resource_drift and resource_changes, plus every resource type seen in
// configuration, prior state and planned values, and the checks that did
// not pass (address, kind, status and the messages their author wrote:
// the one text a Plan keeps that may interpolate a value, which the runner
// redacts).
//
// It owns reading the plan format: a streaming, validating JSON scanner (the
// document is never held in memory as a whole and never unmarshalled into
// tfjson.Plan, which costs about 7x the document size), format_version
// checks against tfjson.PlanFormatVersionConstraints, and the normalised
// before/after diff that yields attribute paths. Sensitive values, and map
// keys below them, never leave the package: a Plan holds no attribute value
// but a drifted object's identifying attributes (Change.IDs: id, arn,
// name, …, never one marked sensitive), for the attribution command.
//
// Classification (drift, pending, noise, forbidden, check) belongs to
// internal/policy. This package is pure: no os/exec, no net/http, and it
// must not import runner, notify or store.
package planparse
