// Package backendpolicy is the state-backend hygiene policy of a workspace:
// Policy, the checks backend.Check runs (backend.Policy is this Policy),
// Default, the built-in one, and Overrides, the `backend_policy:` block
// config carries (in defaults and per workspace) with Apply, which lays
// one over a Policy. It is a leaf: it imports no other internal package, so
// config merges its blocks without importing backend.
package backendpolicy

// Policy selects the checks for one workspace. The zero value checks
// nothing; Default is what a workspace gets unless its configuration says
// otherwise.
type Policy struct {
	// Enabled turns the check on; when false, Check reads nothing.
	Enabled bool `json:"enabled"`
	// AllowLocal accepts local state (e.g. a workspace labelled dev). The
	// state-file permission check still applies.
	AllowLocal bool `json:"allow_local"`
	// RequireEncryption reports backends that store or send state
	// unencrypted (s3 encrypt, http over plain http).
	RequireEncryption bool `json:"require_encryption"`
	// RequireLocking reports backends without state locking.
	RequireLocking bool `json:"require_locking"`
	// CheckBucketPolicy reads an s3 backend's bucket policy, with the
	// run's own credentials, and reports one that grants public access.
	// It is the only check that talks to the network.
	CheckBucketPolicy bool `json:"check_bucket_policy"`
}

// Default returns the policy of a workspace with no backend_policy: every
// check on, local state not allowed.
func Default() Policy {
	return Policy{Enabled: true, RequireEncryption: true, RequireLocking: true, CheckBucketPolicy: true}
}

// Overrides is a `backend_policy:` block (findings of kind backend). Unset
// keys take the defaults' value, then the built-in one.
type Overrides struct {
	// Enabled turns the checks on (default true).
	Enabled *bool `yaml:"enabled"`
	// AllowLocal accepts local state (default: only for workspaces labelled env=dev).
	AllowLocal *bool `yaml:"allow_local"`
	// RequireEncryption: s3 encrypt, https for http backends (default true).
	RequireEncryption *bool `yaml:"require_encryption"`
	// RequireLocking: s3 use_lockfile/dynamodb_table, http lock_address (default true).
	RequireLocking *bool `yaml:"require_locking"`
	// CheckBucketPolicy: read the s3 state bucket's policy and report public
	// access (default true; false keeps the check off the network).
	CheckBucketPolicy *bool `yaml:"check_bucket_policy"`
}

// Apply returns p with the keys o sets; a nil o changes nothing.
func (o *Overrides) Apply(p Policy) Policy {
	if o == nil {
		return p
	}
	for dst, src := range map[*bool]*bool{&p.Enabled: o.Enabled, &p.AllowLocal: o.AllowLocal,
		&p.RequireEncryption: o.RequireEncryption, &p.RequireLocking: o.RequireLocking,
		&p.CheckBucketPolicy: o.CheckBucketPolicy} {
		if src != nil {
			*dst = *src
		}
	}
	return p
}
