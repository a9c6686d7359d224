// Package backend audits the state-backend hygiene of a Terraform root
// module: where its state lives, whether that storage is encrypted and
// locked, whether a local state file is readable by other users, and
// whether an s3 bucket's policy makes the state public. It produces
// drift.Finding values of kind "backend" (drift.KindBackend, Action
// "none", Address "backend.TYPE"), whose Attributes name what to change
// and whose Detail is a one-line reason (Check). The findings and their
// settings are listed for users in docs/classification.md.
//
// The effective backend is read statically (the backend or cloud block of
// the module's files, then the workspace's backend_config on top; anything
// that is not a literal is unknown and yields no finding), through
// source.ReadFile, confined to the source tree. Nothing here runs
// Terraform. The one network call is the s3 bucket-policy read, signed
// with the run's own credentials (Env.Vars, never the daemon's
// environment; package sigv4), and a policy it cannot see is no finding
// and no error. The state-file check reads file modes only.
//
// Values never leave the package: findings carry attribute names, errors
// file names, positions and HCL diagnostic summaries. The one exception is
// ConfigSecrets (with ConfigFileReader), every backend_config value, so
// that runs redact them (tfsession.Prepare).
//
// Policy and its defaults live in the leaf backend/backendpolicy
// (backend.Policy is backendpolicy.Policy), with the backend_policy
// overrides config carries and merges, so config needs no import of this
// package. Design notes: docs/architecture/terraform.md.
//
// It may import drift, source, backend/backendpolicy, backend/sigv4 and
// HCL; it must not import terraform, runner, config, store, notify or app.
package backend
