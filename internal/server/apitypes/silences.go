package apitypes

// Silence holds the messages of a workspace (Workspace) or of every
// workspace with all of Labels from StartsAt until EndsAt.
type Silence struct {
	ID        string            `json:"id"`
	Workspace string            `json:"workspace"`
	Labels    map[string]string `json:"labels"`
	StartsAt  Time              `json:"starts_at"`
	EndsAt    Time              `json:"ends_at"`
	Comment   string            `json:"comment"`
	CreatedBy string            `json:"created_by"`
	CreatedAt Time              `json:"created_at"`
	// Active: it holds messages now.
	Active bool `json:"active"`
}

// MaintenanceWindow is a configured maintenance window: on (Active,
// until Ends) or off (Ends null; next at NextStart, null: never).
type MaintenanceWindow struct {
	Name       string            `json:"name"`
	Workspaces []string          `json:"workspaces"` // globs
	Labels     map[string]string `json:"labels"`
	Schedule   string            `json:"schedule"` // cron, in TimeZone
	TimeZone   string            `json:"time_zone"`
	Duration   string            `json:"duration"` // a Go duration, "2h0m0s"
	Active     bool              `json:"active"`
	Ends       Time              `json:"ends"`
	NextStart  Time              `json:"next_start"`
}

// SilenceList is GET /api/v1/silences: the silences not yet ended and
// the maintenance windows.
type SilenceList struct {
	Silences []Silence           `json:"silences"`
	Windows  []MaintenanceWindow `json:"maintenance_windows"`
}

// SilenceBody is the body of POST /api/v1/silences: Workspace or
// Labels, for how long (a Go duration, "4h"), from when (RFC 3339; "":
// now), why and who asks.
type SilenceBody struct {
	Workspace string            `json:"workspace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	For       string            `json:"for"`
	StartsAt  string            `json:"starts_at,omitempty"`
	Comment   string            `json:"comment"`
	CreatedBy string            `json:"created_by,omitempty"`
}
