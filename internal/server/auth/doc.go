// Package auth establishes who makes a request and whether they may:
// API tokens (a bearer token, or for reads the password of HTTP Basic
// auth), in proxy mode a trusted proxy's headers (believed only from a
// peer in trusted_networks that carries the shared secret), in oidc mode
// an OpenID Connect session cookie. The Identity it establishes names the
// person or token and its Roles (viewer < operator < admin; approver, a
// viewer who also decides remediations, optionally of some workspaces
// only); the guard puts it in the request's context (IdentityFrom).
//
// Authenticator.Admit decides a route's request (Need: the least role,
// run logs, /metrics) and returns the Refusal to answer, if any: 401 for
// no or an invalid credential, 403 for a role too low or a route no
// configured credential could use, saying what to configure. Run logs
// need a credential unless anonymous reads are opened
// (anonymous_role: viewer, open_reads); a log holding attribute values
// always does (Reader, ValuesRefusal). CheckCSRF guards the mutating
// requests of identities a browser presents on its own (Ambient): same
// origin and the identity's CSRF token.
//
// Every credential file is read on every request that offers one, so
// rotation needs no restart, and a file that cannot be read revokes its
// credential; credentials are compared in constant time and never logged.
//
// OIDC is oidc mode's relying party: the sign-in routes (Login, Callback,
// Logout), sessions kept in the store (store.SessionStore; the cookie
// holds a random id, sealed) that idle out, expire and can be revoked.
//
// It renders no page: refusals are values the server renders, and the
// sign-in routes answer through the MessageFunc they are given. It imports
// config (the server section), store, control (WorkspaceInfo) and
// respond; never the server's api, pages or view.
package auth
