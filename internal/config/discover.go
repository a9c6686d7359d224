package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"
)

// Discover is an inventory entry that expands into one workspace per
// Terraform root module found in its source (a Finder finds them): a
// directory with .tf or .tf.json files holding a terraform, backend or
// provider block that no other configuration in the tree calls as a
// local module, kept by Include and Exclude.
//
// A local source is expanded when the config loads with a Finder
// (LoadFileWith), so validate, audit, inventory and the daemon see the
// same workspaces. A git source is expanded by DiscoverGit after a
// checkout (the daemon at start and on every reload, and the inventory
// command); loading alone leaves it unexpanded, and loading without a
// Finder (LoadFile, Load) leaves every entry unexpanded.
type Discover struct {
	// NamePrefix is prepended to every generated name, with a '-'.
	NamePrefix string `yaml:"name_prefix"`
	// Source is the tree searched: a local directory or a git repository
	// (its path, the subdirectory searched), as a workspace's source.
	Source Source `yaml:"source"`
	// Include keeps roots whose relative path matches one of these globs
	// (default: every root); Exclude drops those matching any. "**"
	// matches any number of path segments.
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// Defaults are the generated workspaces' settings.
	Defaults DiscoverDefaults `yaml:"defaults"`

	pos    *positions
	prefix string // key path of this entry, e.g. "discover[0]"
}

// DiscoverDefaults are the settings of a discovery's generated workspaces.
// Keys left out fall back to the config's defaults like any workspace's,
// except remediation, which is off unless set here.
type DiscoverDefaults struct {
	Schedule string   `yaml:"schedule"`
	Timeout  Duration `yaml:"timeout"`
	Owner    string   `yaml:"owner"`
	// Labels are text/template values executed per root over
	// DiscoverData: `env: '{{index .Path 1}}'`.
	Labels   map[string]string `yaml:"labels"`
	Env      map[string]string `yaml:"env"`
	Alerts   *AlertPolicy      `yaml:"alerts"`
	Binary   string            `yaml:"binary"`
	Ignore   []Ignore          `yaml:"ignore"`
	VarFiles []string          `yaml:"var_files"`
	// Remediation of the generated workspaces (default: mode off,
	// whatever defaults.remediation says).
	Remediation *Remediation `yaml:"remediation"`
}

// DiscoverData is what a discovery's label templates see for one root.
type DiscoverData struct {
	// Path is the root's relative path split into segments
	// (envs/prod/network: ["envs" "prod" "network"]).
	Path []string
	// Dir is the relative path itself ("envs/prod/network"; "." for the
	// tree's top).
	Dir string
	// Name is the generated workspace name.
	Name string
}

// Discovered records where a generated workspace came from.
type Discovered struct {
	// Entry is the index of its discover: entry.
	Entry int
	// Path is the root's path relative to the searched tree.
	Path string
}

// Origin is "configured", or "discover[N]" for a generated workspace.
func (w Workspace) Origin() string {
	if w.Discovered == nil {
		return "configured"
	}
	return fmt.Sprintf("discover[%d]", w.Discovered.Entry)
}

// Root is a root module a Finder found in a discover: entry's tree.
type Root struct {
	// Path is its directory relative to the tree, slash-separated ("."
	// for the tree itself).
	Path string
	// Name is the generated workspace's name.
	Name string
	// Outside lists the local module directories it calls that lie
	// outside its own directory.
	Outside []string
}

// Finder reads the trees of discover: entries; config itself reads no
// Terraform file and checks nothing out (internal/inventory's Finder
// does, with internal/discover and internal/source).
type Finder interface {
	// Roots lists the roots under tree kept by the include and exclude
	// globs, named with namePrefix, sorted by path.
	Roots(ctx context.Context, tree string, include, exclude []string, namePrefix string) ([]Root, error)
	// Checkout checks g's repository out (cached in cacheDir, in a
	// temporary directory under workDir, "" the system's) and returns the
	// tree g.Path names in it, and done, which removes the checkout.
	Checkout(ctx context.Context, g GitSource, cacheDir, workDir string) (tree string, done func(), err error)
}

// validate checks the entry itself and returns its compiled label
// templates (nil on error).
func (d *Discover) validate(c *Config) (map[string]*template.Template, []error) {
	var errs []error
	add := func(k, format string, args ...any) {
		errs = append(errs, d.pos.errorf(d.prefix+"."+k, format, args...))
	}
	dir := filepath.Dir(d.pos.file)
	if d.NamePrefix != "" && !dnsLabel.MatchString(d.NamePrefix) {
		add("name_prefix", "%q is not a DNS label (lowercase letters, digits and '-')", d.NamePrefix)
	}
	s := &d.Source
	if s.checkChoice(dir, add) {
		// The generated workspaces' own checks cover the rest of git.
		if s.Git.URL == "" {
			add("source.git.url", "required")
		}
		if filepath.IsAbs(s.Git.Path) || strings.Contains(s.Git.Path, "..") {
			add("source.git.path", "must be a relative path inside the repository")
		}
		s.Git.CredentialsFile = absFrom(dir, s.Git.CredentialsFile)
	}
	for k, list := range map[string][]string{"include": d.Include, "exclude": d.Exclude} {
		for i, g := range list {
			if err := checkPathGlob(g); err != nil {
				add(fmt.Sprintf("%s[%d]", k, i), "invalid glob %q: %v", g, err)
			}
		}
	}
	if d.Defaults.Schedule != "" {
		if err := c.checkSchedule(d.Defaults.Schedule); err != nil {
			add("defaults.schedule", "%v", err)
		}
	}
	tmpls := map[string]*template.Template{}
	for k, v := range d.Defaults.Labels {
		if !labelName.MatchString(k) {
			add("defaults.labels."+k, "invalid label name %q", k)
			continue
		}
		t, err := template.New(k).Option("missingkey=error").Parse(v)
		if err != nil {
			add("defaults.labels."+k, "invalid template %q: %v", v, templateErr(err))
			continue
		}
		tmpls[k] = t
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return tmpls, nil
}

// checkPathGlob reports whether pattern is a valid include or exclude
// glob: path.Match's syntax per slash-separated segment, and "**" for
// any number of segments (the Finder matches them so).
func checkPathGlob(pattern string) error {
	if pattern == "" {
		return errors.New("empty glob")
	}
	for _, seg := range strings.Split(pattern, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}

// templateErr drops the "template: name:" head text/template puts on
// its errors: the key already names it.
func templateErr(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "template: "); ok {
		if i := strings.Index(rest, ": "); i >= 0 {
			return rest[i+2:]
		}
	}
	return msg
}

// expand returns the workspaces of the roots find finds in tree (the
// local directory, or a git checkout's searched subdirectory).
func (d *Discover) expand(ctx context.Context, find Finder, entry int, tree string, tmpls map[string]*template.Template) ([]Workspace, error) {
	roots, err := find.Roots(ctx, tree, d.Include, d.Exclude, d.NamePrefix)
	if err != nil {
		return nil, d.pos.errorf(d.prefix+".source", "%v", err)
	}
	var errs []error
	failed := map[string]bool{}
	out := make([]Workspace, 0, len(roots))
	for _, r := range roots {
		if d.Source.Path != "" && len(r.Outside) > 0 {
			// A local workspace's run copies its directory alone: init
			// would fail on every run. A git run has the whole repository.
			errs = append(errs, d.pos.errorf(d.prefix+".source.path",
				"root %q calls local modules outside its directory (%s), which a local source does not copy into the run: discover this tree from git (source.git), or exclude the root",
				r.Path, strings.Join(r.Outside, ", ")))
			continue
		}
		w := Workspace{
			Name: r.Name, Schedule: d.Defaults.Schedule, Timeout: d.Defaults.Timeout, Owner: d.Defaults.Owner,
			Binary: d.Defaults.Binary, Env: cloneMap(d.Defaults.Env),
			Ignore:     append([]Ignore(nil), d.Defaults.Ignore...),
			VarFiles:   append([]string(nil), d.Defaults.VarFiles...),
			Discovered: &Discovered{Entry: entry, Path: r.Path},
			pos:        d.pos, prefix: d.prefix + ".defaults",
		}
		if d.Source.Path != "" {
			w.Source.Path = filepath.Join(d.Source.Path, filepath.FromSlash(r.Path))
		} else {
			g := *d.Source.Git
			g.Path = path.Join(g.Path, r.Path)
			if g.Path == "." {
				g.Path = ""
			}
			w.Source.Git = &g
		}
		if a := d.Defaults.Alerts; a != nil {
			cp := *a
			cp.Severity = cloneMap(a.Severity)
			w.Alerts = &cp
		}
		w.Remediation = &Remediation{Mode: RemediationOff}
		if d.Defaults.Remediation != nil {
			cp := *d.Defaults.Remediation
			if cp.Mode == "" {
				cp.Mode = RemediationOff
			}
			w.Remediation = &cp
		}
		data := DiscoverData{Path: strings.Split(r.Path, "/"), Dir: r.Path, Name: r.Name}
		if r.Path == "." {
			data.Path = nil
		}
		for k, t := range tmpls {
			var b bytes.Buffer
			if err := t.Execute(&b, data); err != nil {
				if !failed[k] { // the first root is enough to fix the template
					failed[k] = true
					errs = append(errs, d.pos.errorf(d.prefix+".defaults.labels."+k, "root %q (path %q): %v", r.Path, data.Path, templateErr(err)))
				}
				continue
			}
			if w.Labels == nil {
				w.Labels = map[string]string{}
			}
			w.Labels[k] = b.String()
		}
		out = append(out, w)
	}
	return out, errors.Join(errs...)
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// expandDiscover validates every discover: entry and, with find, expands
// those with a local source into c.Workspaces (before validation, which
// checks the generated workspaces like any other).
func (c *Config) expandDiscover(ctx context.Context, pos *positions, find Finder) error {
	var errs []error
	for i := range c.Discover {
		d := &c.Discover[i]
		d.pos, d.prefix = pos, fmt.Sprintf("discover[%d]", i)
		tmpls, verrs := d.validate(c)
		if len(verrs) > 0 {
			errs = append(errs, verrs...)
			continue
		}
		if d.Source.Path == "" || find == nil {
			continue // git: DiscoverGit
		}
		ws, err := d.expand(ctx, find, i, d.Source.Path, tmpls)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.Workspaces = append(c.Workspaces, ws...)
	}
	return errors.Join(errs...)
}

// HasGitDiscovery reports whether a discover: entry reads a git source
// (DiscoverGit expands it).
func (c *Config) HasGitDiscovery() bool {
	for _, d := range c.Discover {
		if d.Source.Git != nil {
			return true
		}
	}
	return false
}

// DiscoverGit checks out, with find, the source of every git discover:
// entry (in terraform.git_cache_dir, as runs do) and adds the workspaces
// of the roots found there to c, validated like any workspace: errors
// name the entry's file, line and key. It is called on a loaded config
// (internal/inventory's DiscoverGit, for the daemon at start and on every
// reload, audit and the inventory command); on error c is unchanged.
// Once it has succeeded, a second call does nothing.
func (c *Config) DiscoverGit(ctx context.Context, find Finder) error {
	if c.gitDiscovered {
		return nil
	}
	var added []Workspace
	var errs []error
	for i := range c.Discover {
		d := &c.Discover[i]
		if d.Source.Git == nil {
			continue
		}
		tmpls, verrs := d.validate(c)
		if len(verrs) > 0 {
			errs = append(errs, verrs...)
			continue
		}
		ws, err := d.expandGit(ctx, find, i, c.gitCacheDir(), c.Terraform.WorkDir, tmpls)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		added = append(added, ws...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	next := *c
	next.gitDiscovered = true
	next.Workspaces = append(append([]Workspace(nil), c.Workspaces...), added...)
	first := map[string]string{}
	for _, w := range c.Workspaces {
		first[w.Name] = w.describe()
	}
	for i := len(c.Workspaces); i < len(next.Workspaces); i++ {
		w := &next.Workspaces[i]
		errs = append(errs, w.validate(&next)...)
		errs = append(errs, checkDuplicate(first, w)...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	*c = next
	return nil
}

func (d *Discover) expandGit(ctx context.Context, find Finder, entry int, cacheDir, workDir string, tmpls map[string]*template.Template) ([]Workspace, error) {
	tree, done, err := find.Checkout(ctx, *d.Source.Git, cacheDir, workDir)
	if err != nil {
		return nil, d.pos.errorf(d.prefix+".source.git", "%v", err)
	}
	defer done()
	return d.expand(ctx, find, entry, tree, tmpls)
}

// gitCacheDir is terraform.git_cache_dir, else the cache runs use.
func (c *Config) gitCacheDir() string {
	if c.Terraform.GitCacheDir != "" {
		return c.Terraform.GitCacheDir
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "driftwatch", "git")
	}
	return filepath.Join(os.TempDir(), "driftwatch-cache", "git")
}

// describe names where w was declared, for duplicate-name errors.
func (w *Workspace) describe() string {
	if w.Discovered != nil {
		return fmt.Sprintf("%s (root %q)", w.pos.at(fmt.Sprintf("discover[%d]", w.Discovered.Entry)), w.Discovered.Path)
	}
	return w.pos.at(w.prefix + ".name")
}

// checkDuplicate reports w's name if first already holds it, else records
// it there.
func checkDuplicate(first map[string]string, w *Workspace) []error {
	if w.Name == "" {
		return nil
	}
	if prev, dup := first[w.Name]; dup {
		if w.Discovered != nil {
			return []error{fmt.Errorf("%s: root %q: duplicate workspace name %q (first defined at %s)",
				w.pos.at(fmt.Sprintf("discover[%d]", w.Discovered.Entry)), w.Discovered.Path, w.Name, prev)}
		}
		return []error{w.pos.errorf(w.prefix+".name", "duplicate workspace name %q (first defined at %s)", w.Name, prev)}
	}
	first[w.Name] = w.describe()
	return nil
}
