// Package accept computes the code change that accepts drift: for each
// drifted attribute of a plan's resource_drift it finds where the
// configuration sets the value (a literal in the resource block, a
// locals entry, a *.tfvars file the workspace reads, a variable's
// default, or a module block's argument) and rewrites that place to the
// value reality has, keeping the rest of the file (comments, layout) as
// it was. What it cannot rewrite it refuses, naming why: a function call,
// a conditional, a for expression, a template with interpolations, a
// reference to another object, a sensitive value, a place in a module
// that several module blocks call, a count or for_each instance.
//
// A resource deleted outside Terraform is refused unless the request
// asks for deletions (Request.Deletions): then its resource block in the
// root module becomes, in place, a removed block with destroy = false
// (plain for OpenTofu 1.7 to 1.9, which read no lifecycle there), unless
// it is a module's, a count or for_each instance's, or referred to
// elsewhere in the code.
//
// The change is a proposal only: whether it really accepts the drift is
// for a plan of the changed code to prove (no change left for the
// accepted addresses, nothing new elsewhere). Values are written into
// the files and nowhere else: Accepted and Refusal carry places and
// reasons, never values.
//
// It reads HCL files and a plan; it imports no other driftwatch package.
package accept
