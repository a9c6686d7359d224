// Package source materialises a workspace's Terraform code into a private
// working directory, so that Terraform never writes into a user's checkout.
//
// Two kinds of source exist: a local directory, copied with [CopyTree], and a
// git repository, fetched with [Git.Checkout] into a cache of bare
// repositories (one per URL, shared between processes through flock) and then
// checked out, without .git, into the destination.
//
// A source is not trusted. A checkout that holds a symlink leading outside
// it (to /dev/zero, a named pipe, /etc/passwd) fails, as does a copy, and
// every file of a source that driftwatch reads itself goes through
// [ReadFile]: regular files only, symlinks only inside the tree, never a
// blocking open, at most [MaxConfigFileSize] bytes, under the run's context.
//
// [Git.Push] writes a commit of given files on a checked-out commit with
// git's plumbing in the same cache repository, under its lock, and pushes
// it to a branch: deterministic (the same files on the same base are the
// same commit, so repeated pushes give one branch), and moving only a
// branch whose tip is its own author's commit. [Git.BaseBranch] is the
// branch such a change is proposed into.
//
// Git runs as a subprocess with a scrubbed environment. An access token is
// only ever handed to git through the environment (GIT_CONFIG_COUNT carrying
// an http.<url>.extraHeader), never through an argument or a URL, and every
// piece of git output that reaches an error is bounded and redacted.
//
// [Locator] finds the block that declares a resource address (resource and
// data blocks, module calls followed into local module directories, the
// backend block) by a static read of a root module's .tf and .tf.json
// files, for SARIF and annotation locations.
//
// The package owns no configuration type and imports no other driftwatch
// package; config and app decide where the cache lives and which targets use
// which source.
package source
