// Package terraform is the Terraform wing's common ground: Request, what
// one run of a workspace needs (source, binary, variables, environment,
// secret files, jail), and Error, how a run fails (the phase and a
// one-line, secret-free reason). The runners take a Request, the session
// (tfsession), the sandbox and the apply engine read it, and every layer
// above reports Error.
//
// Its subpackages are the wing itself: tfsession drives Terraform through
// terraform-exec, sandbox is the run directory, scrubbed environment and
// jail, planparse and planfile read plans. This package imports none of
// them, nor any package above the wing.
package terraform
