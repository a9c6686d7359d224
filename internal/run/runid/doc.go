// Package runid mints run ids, in one format for every run: queued by the
// scheduler, started without a queue entry, applying a remediation, or run
// by a one-shot audit. An id is 16 lowercase hex digits (64 random bits
// from crypto/rand): safe in URLs, log lines, file names and Kubernetes
// labels, and unique without coordination (a collision becomes likely only
// after billions of ids). Ids are not ordered: sort runs by their times.
//
// It owns the format only: it does not record, validate or look up runs
// (store, server). It imports only the standard library and must not import
// any driftwatch package, so every package may use it.
package runid
