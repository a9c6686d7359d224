package sqlite

// KeepAudit is how many identified callers' audit entries are kept
// whatever their age; KeepAnonymous how many anonymous ones.
const (
	KeepAudit     = keepAudit
	KeepAnonymous = keepAnonymous
)

// SetAuditCaps lowers the audit log's caps: identified callers' entries
// and anonymous ones.
func SetAuditCaps(s *Store, identified, anonymous int) { s.auditCaps = [2]int{identified, anonymous} }
