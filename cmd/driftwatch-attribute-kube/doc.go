// Command driftwatch-attribute-kube is an attribution command (the
// `attribution.command` of issue #33) over the Kubernetes audit log: it
// names who last changed a kubernetes_* resource.
//
//	driftwatch-attribute-kube [-audit-log FILE]...   (default $DRIFTWATCH_AUDIT_LOG)
//
// It reads driftwatch's query (JSON: type, address, ids, window) on stdin
// and the audit log (JSON lines of audit.k8s.io/v1 Events, as
// kube-apiserver's --audit-log-path writes them; -audit-log repeats for
// rotated files). The object is the type's API resource
// (kubernetes_config_map_v1 is configmaps) with the namespace and name of
// the ids (metadata.namespace and metadata.name, else the id
// "namespace/name", or "name" for a cluster-scoped object). Of the events
// that completed (stage ResponseComplete) a create, update, patch or
// delete of that object itself (no subresource) with a 2xx status inside
// the window, the last one answers:
//
//	{"actor":"<user.username>","time":"<stageTimestamp>","source":"kubernetes-audit","event_id":"<auditID>"}
//
// An impersonated request's actor is "<impersonated> (impersonated by
// <user>)". The audit policy must log configmaps (or whichever resources
// are watched) at level Metadata or above, ResponseComplete stage included.
//
// Exit codes: 0 with the answer on stdout; 1 with one line on stderr when
// nothing is found (or the type is not the kubernetes provider's); 2 for
// a usage, query or log-reading error.
//
// Like every cmd package it imports no driftwatch package outside its
// tests: the JSON on stdin and stdout is its whole contract with the
// daemon (internal/drift/attribution, which its tests drive it through).
package main
