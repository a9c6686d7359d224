// Package planfile reads a saved plan file (`terraform plan -out FILE`,
// Terraform or OpenTofu) directly, without starting Terraform and without
// provider schemas.
//
// A plan file is a zip archive. This package owns reading three of its
// members: the plan itself (`tfplan`, protobuf, whose values are msgpack),
// the prior state (`tfstate`, state format version 4) and the
// configuration snapshot (`tfconfig/modules.json` plus the module files
// under `tfconfig/m-<KEY>/`). From them it derives what planparse.Parse
// would make of `show -json` of the same plan, so a check can skip that
// second Terraform process, which starts every provider again:
//
//   - CleanResources: the resources of a plan with no change at all, from
//     the state and configuration snapshot only (the tfplan member is not
//     read).
//   - Decode: the whole summary of any plan: drift, changes and their
//     attribute paths, output changes, relevant attributes, resources.
//     Each change's values are rendered as show -json renders them (see
//     msgpack.go) and handed to planparse's own path computation.
//
// It keeps addresses, types, actions and attribute paths only. Values are
// decoded one change at a time and dropped once its paths are known; state
// attribute values are skipped by the JSON decoder and never kept;
// configuration is read as block headers only, and no expression is
// evaluated. Error messages name members, positions, indices and
// addresses, never values or file content: a plan holds secrets.
//
// It never starts Terraform (no os/exec) and must not import runner,
// tfsession, store, notify, server, app or policy; it depends on
// planparse for the types it returns and for Change.SetPaths.
package planfile
