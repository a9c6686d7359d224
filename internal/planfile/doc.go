// Package planfile reads a saved plan file (`terraform plan -out FILE`,
// Terraform or OpenTofu) directly, without starting Terraform and without
// provider schemas.
//
// A plan file is a zip archive. This package owns reading two of its
// members: the prior state (`tfstate`, state format version 4) and the
// configuration snapshot (`tfconfig/modules.json` plus the module files
// under `tfconfig/m-<KEY>/`). From them it derives what `show -json` would
// list as configuration, prior_state and planned_values resources of a plan
// with no change at all, in the shape planparse.Plan.Resources has, so a
// clean check can skip the second Terraform process. The `tfplan` member
// (protobuf) is never read.
//
// It keeps addresses and types only. State attribute values are skipped by
// the JSON decoder and never kept; configuration is read as block headers
// only, and no expression is evaluated. Error messages name members,
// positions and indices, never file content: a state holds secrets.
//
// It never starts Terraform (no os/exec) and must not import runner,
// tfsession, store, notify, server, app or policy; it depends on
// planparse only for the TypedResource type it returns.
package planfile
