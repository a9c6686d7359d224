package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/report"
)

// inventoryCmd prints the expanded inventory: every workspace the config
// declares or discovers (git discover: entries are checked out for it),
// as a table or as YAML.
func inventoryCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inventory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "driftwatch.yaml", "config file")
	format := fs.String("format", "table", "output format: table or yaml")
	if err := fs.Parse(args); err != nil {
		return report.ExitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "driftwatch: unexpected argument %q\n", fs.Arg(0))
		return report.ExitError
	}
	if *format != "table" && *format != "yaml" {
		fmt.Fprintf(stderr, "driftwatch: unknown format %q (use table or yaml)\n", *format)
		return report.ExitError
	}
	cfg, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return report.ExitError
	}
	if cfg.HasGitDiscovery() {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := app.DiscoverGit(ctx, cfg); err != nil {
			fmt.Fprintf(stderr, "driftwatch: discovery:\n%v\n", err)
			return report.ExitError
		}
	}
	rows := inventoryRows(cfg)
	var err error
	if *format == "yaml" {
		err = writeInventoryYAML(stdout, rows)
	} else {
		err = writeInventoryTable(stdout, rows)
	}
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: %v\n", err)
		return report.ExitError
	}
	return 0
}

// inventoryRow is one workspace as the inventory command shows it. Its
// YAML form is the config's workspace entry (empty keys left out), so the
// output of --format yaml can be pasted back as configuration; Origin
// and DiscoveredPath, which are no config keys, are a comment on its name.
type inventoryRow struct {
	Name     string            `yaml:"name"`
	Source   inventorySource   `yaml:"source"`
	Schedule string            `yaml:"schedule,omitempty"`
	Owner    string            `yaml:"owner,omitempty"`
	Labels   map[string]string `yaml:"labels,omitempty"`
	// Origin is "configured" or "discover[N]"; DiscoveredPath the root's
	// path in that entry's tree.
	Origin         string `yaml:"-"`
	DiscoveredPath string `yaml:"-"`
}

type inventorySource struct {
	Path string        `yaml:"path,omitempty"`
	Git  *inventoryGit `yaml:"git,omitempty"`
}

// inventoryGit is config.GitSource with its empty keys left out.
type inventoryGit struct {
	URL             string `yaml:"url"`
	Ref             string `yaml:"ref,omitempty"`
	Path            string `yaml:"path,omitempty"`
	CredentialsFile string `yaml:"credentials_file,omitempty"`
}

// inventoryRows lists cfg's workspaces in config order (configured, then
// discovered), paths shown relative to the config file's directory when
// they are under it.
func inventoryRows(cfg *config.Config) []inventoryRow {
	dir := filepath.Dir(cfg.File)
	out := make([]inventoryRow, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		r := inventoryRow{Name: w.Name, Schedule: w.Schedule, Owner: w.Owner, Labels: w.Labels, Origin: w.Origin()}
		if w.Discovered != nil {
			r.DiscoveredPath = w.Discovered.Path
		}
		if g := w.Source.Git; g != nil {
			// The credentials file's path, not its content.
			r.Source.Git = &inventoryGit{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile}
		} else {
			r.Source.Path = w.Source.Path
			if rel, err := filepath.Rel(dir, w.Source.Path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				r.Source.Path = rel
			}
		}
		out = append(out, r)
	}
	return out
}

// writeInventoryYAML writes rows as a config's workspaces: list, each
// entry's origin (and discovered path) a comment on its name.
func writeInventoryYAML(w io.Writer, rows []inventoryRow) error {
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, r := range rows {
		var n yaml.Node
		if err := n.Encode(r); err != nil {
			return err
		}
		comment := r.Origin
		if r.DiscoveredPath != "" {
			comment += ": " + r.DiscoveredPath
		}
		n.Content[1].LineComment = comment // the value of name:, the first key
		list.Content = append(list.Content, &n)
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "workspaces"}, list}}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}

// writeInventoryTable prints NAME, SOURCE (local, or the git URL and
// ref), PATH (the directory, or the path in the repository), SCHEDULE,
// LABELS (k=v, sorted) and ORIGIN.
func writeInventoryTable(w io.Writer, rows []inventoryRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tPATH\tSCHEDULE\tLABELS\tORIGIN")
	for _, r := range rows {
		src, p := "local", r.Source.Path
		if g := r.Source.Git; g != nil {
			src, p = g.URL, g.Path
			if g.Ref != "" {
				src += "@" + g.Ref
			}
			if p == "" {
				p = "."
			}
		}
		labels := make([]string, 0, len(r.Labels))
		for k, v := range r.Labels {
			labels = append(labels, k+"="+v)
		}
		sort.Strings(labels)
		l := strings.Join(labels, ",")
		if l == "" {
			l = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, src, p, r.Schedule, l, r.Origin)
	}
	return tw.Flush()
}
