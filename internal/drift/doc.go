// Package drift holds the domain nouns shared by every driftwatch package:
// statuses, finding kinds, findings, counts, run phases, per-workspace
// results and what adopting a scan's unmanaged resources came to
// (AdoptOutcome), plus the small helpers on them (CountFindings, StatusOf,
// SortFindings, Fingerprint). It is plain data: no I/O, no clock, no
// logging.
//
// It imports nothing but the standard library, and must not import any
// driftwatch package: every other package may import it.
package drift
