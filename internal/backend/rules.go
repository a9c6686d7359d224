package backend

import (
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// stateFile is a local state file that exists, by the local backend
// attribute that places it (path or workspace_dir) and its permission bits.
type stateFile struct {
	attr string
	mode fs.FileMode
}

// issue is one finding before it becomes a drift.Finding: the attribute
// names to change and a one-line, value-free reason.
type issue struct {
	typ    string
	attrs  []string
	reason string
}

// finding converts an issue.
func (is issue) finding() drift.Finding {
	return drift.Finding{
		Kind:       drift.KindBackend,
		Detail:     is.reason,
		Address:    "backend." + is.typ,
		Type:       is.typ,
		Action:     "none",
		Attributes: is.attrs,
	}
}

// issues applies p to the effective backend c and, for a local backend, the
// modes of its existing state files. It is pure.
func issues(c config, states []stateFile, p Policy) []issue {
	if !p.Enabled {
		return nil
	}
	var out []issue
	add := func(reason string, attrs ...string) {
		slices.Sort(attrs)
		out = append(out, issue{typ: c.typ, attrs: attrs, reason: reason})
	}
	switch c.typ {
	case "local":
		if !p.AllowLocal {
			what := "local backend"
			if c.implicit {
				what = "no backend block"
			}
			add(what+": state lives on one disk, with no locking across machines and no encryption at rest", "backend")
		}
		if is, ok := readableStates(states); ok {
			is.typ = c.typ
			out = append(out, is)
		}
	case "s3":
		if p.RequireEncryption {
			if enc, pr := c.boolean("encrypt"); pr == unset || (pr == known && !enc) {
				add("s3 backend without encrypt = true: state objects are not server-side encrypted by Terraform", "encrypt")
			}
		}
		if p.RequireLocking {
			lockfile, lp := c.boolean("use_lockfile")
			table, tp := c.str("dynamodb_table")
			locked := (lp == known && lockfile) || (tp == known && table != "")
			if !locked && lp != unknown && tp != unknown {
				add("s3 backend without locking: set use_lockfile = true (Terraform >= 1.10) or dynamodb_table", "use_lockfile", "dynamodb_table")
			}
		}
		if p.RequireEncryption {
			var plain []string
			for _, name := range []string{"endpoint", "dynamodb_endpoint", "iam_endpoint", "sts_endpoint"} {
				if u, pr := c.str(name); pr == known && isPlainRemoteHTTP(u) {
					plain = append(plain, name)
				}
			}
			for _, svc := range []string{"dynamodb", "iam", "s3", "sso", "sts"} {
				if u, pr := c.field("endpoints", svc); pr == known && isPlainRemoteHTTP(u) {
					plain = append(plain, "endpoints."+svc)
				}
			}
			if len(plain) > 0 {
				add("s3 backend endpoint over plain http:// to a host that is not loopback: state, lock and session tokens cross the network unencrypted", plain...)
			}
		}
	case "http":
		if p.RequireLocking {
			if addr, pr := c.str("lock_address"); pr == unset || (pr == known && strings.TrimSpace(addr) == "") {
				add("http backend without lock_address: concurrent runs can overwrite each other's state", "lock_address")
			}
		}
		if p.RequireEncryption {
			var plain []string
			for _, name := range []string{"address", "lock_address", "unlock_address"} {
				if u, pr := c.str(name); pr == known && isPlainHTTP(u) {
					plain = append(plain, name)
				}
			}
			if len(plain) > 0 {
				add("http backend over plain http://: state and credentials cross the network unencrypted", plain...)
			}
			if skip, pr := c.boolean("skip_cert_verification"); pr == known && skip {
				add("http backend with skip_cert_verification = true: the state server's TLS certificate is not verified", "skip_cert_verification")
			}
		}
	case "consul":
		if p.RequireLocking {
			if lock, pr := c.boolean("lock"); pr == known && !lock {
				add("consul backend with lock = false: concurrent runs can overwrite each other's state", "lock")
			}
		}
	}
	// gcs, azurerm, pg, kubernetes, remote, cloud: encryption at rest and
	// locking are built in (or up to the service); other types are unknown.
	return out
}

// readableStates returns one issue for the state files readable by group
// or other users, naming the attributes that place them.
func readableStates(states []stateFile) (issue, bool) {
	var (
		attrs []string
		n     int
		mode  fs.FileMode
	)
	for _, s := range states {
		if s.mode.Perm()&0o044 == 0 {
			continue
		}
		if n == 0 {
			mode = s.mode.Perm()
		}
		n++
		if !slices.Contains(attrs, s.attr) {
			attrs = append(attrs, s.attr)
		}
	}
	if n == 0 {
		return issue{}, false
	}
	slices.Sort(attrs)
	files := "a local state file is"
	if n > 1 {
		files = fmt.Sprintf("%d local state files are", n)
	}
	return issue{attrs: attrs, reason: fmt.Sprintf("%s readable by group or other users (mode %04o): chmod 600", files, mode)}, true
}

// isPlainRemoteHTTP reports whether u is a plain http:// URL to a host
// other than loopback (127.0.0.0/8, ::1, localhost): a loopback endpoint
// (a local S3-compatible store, a proxy on the same machine) is not on the
// wire. A URL that does not parse is not known to be loopback.
func isPlainRemoteHTTP(u string) bool {
	if !isPlainHTTP(u) {
		return false
	}
	parsed, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return true
	}
	host := strings.TrimSuffix(strings.ToLower(parsed.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// isPlainHTTP reports whether u uses the unencrypted http scheme.
func isPlainHTTP(u string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), "http://")
}
