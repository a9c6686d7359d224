// Package respond writes the answers every part of the server shares: a
// JSON body (indented, with its newline), an error as the API spells it
// ({"error": "..."}), plain text, a refusal with its challenge, a 500
// that logs its cause and tells the client nothing, and the 64 KiB bound
// on a mutating request's body (413). Each sets Content-Type, nosniff
// and Cache-Control: no-store.
//
// It knows nothing of routes, roles or pages: the API's handlers
// (server/api), the sign-in routes (server/auth) and the guard and
// probes (server) call it. It imports apitypes (the error body) and the
// standard library only.
package respond
