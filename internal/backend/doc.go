// Package backend audits the state-backend hygiene of a Terraform root
// module: where its state lives, whether that storage is encrypted and
// locked, and whether a local state file is readable by other users. It
// produces drift.Finding values of kind "backend" (drift.KindBackend).
//
// The effective backend is read statically: every *.tf and *.tf.json file of
// the root module (override files last, replacing the block like Terraform
// does), the `terraform { backend "TYPE" { ... } }` or `cloud { ... }` block,
// then the workspace's backend_config entries ("key=value", or a path,
// relative to the module directory, to an HCL file of key = value) on top,
// later entries winning. Attribute values are evaluated without variables
// or functions: anything that is not a literal (var.x, local.y, lower(...),
// "${...}" in JSON) is unknown, and an unknown attribute never yields a
// finding. Nothing here runs Terraform, and only one check touches the
// network (the s3 bucket policy, below).
//
// Values never leave the package: findings carry attribute names only, and
// errors carry file names, positions and HCL diagnostic summaries (never
// their details, which may quote source text). Credentials in the block or
// in backend_config (access_key, secret_key, token, password, conn_str, ...)
// are read only as far as the parser goes and are never copied anywhere,
// but for one purpose: ConfigSecrets returns every backend_config value
// (of an entry or in a file, ConfigFileReader) so that runs redact them
// from their logs and errors.
//
// Findings, all with Action "none", Address "backend.TYPE" and Type TYPE;
// the Attributes name what to change, and a one-line reason is computed for
// each, in drift.Finding.Detail:
//
//	local (no backend block, or backend "local"), unless Policy.AllowLocal:
//	  [backend]                    state on one disk, no locking across machines, no encryption
//	local, a state file or its .backup readable by group/other (mode & 0o044):
//	  [path]                       the default workspace's state (path, terraform.tfstate)
//	  [workspace_dir]              other workspaces' state (terraform.tfstate.d/NAME/)
//	s3 without encrypt = true (RequireEncryption):
//	  [encrypt]
//	s3 without use_lockfile = true and without a dynamodb_table (RequireLocking):
//	  [dynamodb_table use_lockfile]
//	s3 with endpoints.{dynamodb,iam,s3,sso,sts} or the legacy endpoint,
//	dynamodb_endpoint, iam_endpoint, sts_endpoint over plain http:// to a
//	host that is not loopback (127.0.0.0/8, ::1, localhost) (RequireEncryption):
//	  the offending attribute names (endpoints.s3, ...)
//	s3 whose bucket policy grants public access (CheckBucketPolicy):
//	  [bucket]
//	http without lock_address (RequireLocking):
//	  [lock_address]
//	http with address, lock_address or unlock_address over plain http:// (RequireEncryption):
//	  the offending attribute names
//	http with skip_cert_verification = true (RequireEncryption):
//	  [skip_cert_verification]
//	consul with lock = false (RequireLocking; the default is true):
//	  [lock]
//
// Backends that are clean by construction: gcs and azurerm (encrypted at
// rest by the cloud provider, locking built in), pg (advisory locks),
// kubernetes (Lease locks), remote and cloud (HCP Terraform / Enterprise).
// Any other backend type is unknown here and yields no finding. Consul's
// scheme is not checked: the backend usually talks to a local agent.
//
// The bucket-policy check is the package's one network call: with the
// run's own credentials (Env.Vars: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN; the daemon's environment is never read) it sends one
// SigV4-signed GET /?policy (package sigv4) to the block's endpoint or the
// region's AWS endpoint, path-style under use_path_style, follows no
// redirect and gives up after a few seconds. A statement is public when it
// allows (Effect Allow) Principal "*" or {"AWS": "*"}, or any NotPrincipal,
// one of the actions that read, write, list or take over the state objects
// (s3:GetObject, s3:PutObject, s3:ListBucket, s3:PutBucketPolicy, ...,
// matched through wildcards and NotAction), without a Condition that pins
// the caller (aws:SourceIp, aws:SourceVpce, aws:PrincipalOrgID, ... under a
// positive operator). Deny statements and Resource are not weighed. A policy
// it cannot see (no credentials, a value not known statically,
// NoSuchBucketPolicy, AccessDenied, NotImplemented, a network error, a
// timeout, unparsable JSON) is no finding and never an error: Env.Log gets
// a debug line with the reason (an HTTP status and S3 error code at most).
// The finding's reason names the principal forms, the canonical action
// names and statement numbers; never the credentials, the signature, or
// the policy's text.
//
// The state-file check reads file modes only (never contents) and looks at
// the file, not its parent directories. Backend findings do not change a
// workspace's status; the caller counts them separately.
//
// Files are read only through source.ReadFile, confined to the source tree:
// a module file that is a named pipe, a device or a symlink out of the tree
// is an error, never a hang.
//
// Policy and its defaults live in the leaf internal/backend/backendpolicy
// (backend.Policy is backendpolicy.Policy), with the `backend_policy:`
// overrides config carries and merges (config.EffectiveBackendPolicy), so
// config needs no import of this package.
//
// This package may import drift, source (for its safe reader),
// backend/backendpolicy, backend/sigv4 and HCL; it must not import runner,
// config, store, notify or app, and opens no network connection but the
// bucket-policy read.
package backend
