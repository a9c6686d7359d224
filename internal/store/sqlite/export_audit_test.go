package sqlite

// KeepAudit is how many audit entries Prune keeps whatever their age.
const KeepAudit = keepAudit
