// Package discover finds the Terraform root modules in a directory tree,
// for the inventory's `discover:` entries.
//
// A root is a directory holding .tf or .tf.json files with a terraform
// (and so backend), or provider block, that no other configuration in the
// tree calls as a local module (`source = "./x"` or "../x"), kept by the
// include and exclude globs. Each root gets a name derived from its path:
// a DNS label, stable for the path, with collisions reported as an error
// naming both paths.
//
// The read is static and untrusted: files go through source.ReadFile
// (regular files only, bounded, no symlink leading out of the tree) and
// are parsed with source.ParseConfig; nothing is evaluated and no
// Terraform runs. Symlinks (files and directories) are skipped, as are
// hidden directories (.git, .terraform) and node_modules. A file that does
// not parse is an error, never a root silently missed.
//
// It imports only internal/source and must not import config, app or
// anything that runs Terraform or git. Its user is inventory's Finder:
// config decides which trees are read (a local directory, a git checkout
// the Finder makes) and what the found roots become.
package discover
