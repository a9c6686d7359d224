package apitypes

import "time"

// AdoptTimeout bounds one adoption through the API: the daemon answers
// within it (init, the scan's query with -generate-config-out, the proof
// plan), so a client waits a little longer.
const AdoptTimeout = 10 * time.Minute

// AdoptBody is the body of POST /api/v1/workspaces/{scan}/adopt: the
// scan's unmanaged resources to adopt, by their finding addresses (as
// the workspace's findings and `driftwatch adopt` name them).
type AdoptBody struct {
	Findings []string `json:"findings"`
}

// Adoption is what adopting a scan's unmanaged resources came to: the
// import blocks and configuration Terraform generated for them and
// whether a plan of a scratch copy with them proved they import and
// change nothing else. Nothing of it is stored.
type Adoption struct {
	Scan        string   `json:"scan"`
	Findings    []string `json:"findings"`
	RequestedBy string   `json:"requested_by,omitempty"`
	// State is proven (File is safe to commit to the workspace that
	// should own them), not_proven (Remaining says what else the plan
	// would do) or failed (Error says why).
	State  string `json:"state"`
	Proven bool   `json:"proven"`
	Tool   string `json:"tool,omitempty"`
	// Adopted are the generated blocks, per finding.
	Adopted []AdoptedResource `json:"adopted"`
	// Missing are requested findings the scan's query no longer lists.
	Missing []string `json:"missing"`
	// Remaining is, when not proven, what the plan would do besides
	// importing: "ADDRESS: ACTION".
	Remaining []string `json:"remaining"`
	// File is the generated Terraform file (every import and resource
	// block), as `driftwatch adopt --output` writes it; FileName the
	// name to give it.
	File     string `json:"file,omitempty"`
	FileName string `json:"file_name,omitempty"`
	Error    string `json:"error,omitempty"`
}

// AdoptedResource is one unmanaged resource made code: its finding, the
// import block and the resource block Terraform generated.
type AdoptedResource struct {
	Finding string `json:"finding"`
	Import  string `json:"import"`
	Config  string `json:"config"`
}
