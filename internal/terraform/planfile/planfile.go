package planfile

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// Member names, the same in Terraform's and OpenTofu's plan files.
const (
	memberPlan      = "tfplan" // protobuf: read by Decode only
	memberState     = "tfstate"
	memberManifest  = "tfconfig/modules.json"
	memberModulePfx = "tfconfig/m-"
)

// Resource modes, as show -json and the state format spell them.
const (
	modeManaged = "managed"
	modeData    = "data"
)

// limits bounds what is decompressed from one member, against zip bombs.
type limits struct {
	state  int64 // the tfstate member
	config int64 // the manifest and each configuration file
}

// defaultLimits are generous for real workspaces: the largest states seen
// in practice are tens of MiB.
var defaultLimits = limits{state: 512 << 20, config: 16 << 20}

// CleanResources returns what planparse.Parse would return as Plan.Resources
// for the `show -json` of planFile, a saved plan with no changes at all,
// read from the plan file alone.
//
// On such a plan, show -json's configuration lists the resource and data
// blocks of every module of the configuration snapshot; prior_state is the
// plan's tfstate member; planned_values holds every managed resource
// instance of that state again (each is a no-op) and no data resource (a
// data source read during the plan is not a change; one still to be read,
// such as a data block nested in a check block, makes the plan not clean).
// On a plan with changes the planned values differ, so callers must only
// use it for plans whose exit code is 0 and that show nothing else.
//
// Any missing member, an encrypted plan, an unknown state version or a
// malformed member is an error; callers then fall back to show -json. No
// error quotes the content of the plan file.
func CleanResources(planFile string) ([]planparse.TypedResource, []drift.Managed, error) {
	c, err := cleanResources(planFile, defaultLimits)
	if err != nil {
		return nil, nil, fmt.Errorf("read plan file: %w", err)
	}
	return c.sorted(), c.managedSorted(), nil
}

func cleanResources(planFile string, lim limits) (*collector, error) {
	zr, members, err := openPlan(planFile)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	c := newCollector()
	if err := readConfig(zr.File, members[memberManifest], lim.config, c); err != nil {
		return nil, fmt.Errorf("configuration snapshot: %w", err)
	}
	if err := readState(members[memberState], lim.state, c, true); err != nil {
		return nil, fmt.Errorf("%s: %w", memberState, err)
	}
	return c, nil
}

// openPlan opens a plan file and indexes its members by name, requiring
// the plan, the prior state and the configuration snapshot.
func openPlan(planFile string) (*zip.ReadCloser, map[string]*zip.File, error) {
	zr, err := zip.OpenReader(planFile)
	if err != nil {
		if errors.Is(err, zip.ErrFormat) && looksEncrypted(planFile) {
			return nil, nil, errors.New("not a zip archive (an encrypted OpenTofu plan?)")
		}
		return nil, nil, err
	}
	members := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		if _, dup := members[f.Name]; dup {
			zr.Close()
			return nil, nil, fmt.Errorf("duplicate member %q", f.Name)
		}
		members[f.Name] = f
	}
	for _, name := range []string{memberPlan, memberState, memberManifest} {
		if members[name] == nil {
			zr.Close()
			return nil, nil, fmt.Errorf("no %s member: not a plan file", name)
		}
	}
	return zr, members, nil
}

// looksEncrypted reports whether a file that is not a zip archive starts
// like a JSON object, which is how OpenTofu writes an encrypted plan.
func looksEncrypted(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [64]byte
	n, _ := io.ReadFull(f, b[:])
	return bytes.HasPrefix(bytes.TrimLeft(b[:n], " \t\r\n"), []byte("{"))
}

// errTooLarge reports a member that decompresses to more than its limit.
var errTooLarge = errors.New("member exceeds the size limit")

// openMember opens a member, refusing it up front when its header already
// declares more than limit bytes and failing the read past limit bytes when the
// header lies.
func openMember(f *zip.File, limit int64) (io.ReadCloser, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("%s: %w (%d bytes)", f.Name, errTooLarge, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{&capReader{r: rc, n: limit}, rc}, nil
}

// readMember reads a whole member of at most limit bytes.
func readMember(f *zip.File, limit int64) ([]byte, error) {
	rc, err := openMember(f, limit)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return b, nil
}

// capReader reads at most n bytes from r and fails with errTooLarge if r
// has more.
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		var b [1]byte
		k, err := c.r.Read(b[:])
		if k > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	return k, err
}

// collector merges resources by address as planparse does: one entry per
// address, SeenIn in the order config, state, plan.
type collector struct {
	byAddr  map[string]*planparse.TypedResource
	managed []drift.Managed
}

func newCollector() *collector {
	return &collector{byAddr: map[string]*planparse.TypedResource{}}
}

func (c *collector) add(addr, mode, typ, seen string) {
	r := c.byAddr[addr]
	if r == nil {
		r = &planparse.TypedResource{Address: addr, Mode: mode, Type: typ}
		c.byAddr[addr] = r
	}
	if !slices.Contains(r.SeenIn, seen) {
		r.SeenIn = append(r.SeenIn, seen)
	}
}

func seenRank(s string) int {
	switch s {
	case drift.SeenInConfig:
		return 0
	case drift.SeenInState:
		return 1
	}
	return 2
}

// sorted returns the resources sorted by address, never nil (as
// planparse.Parse returns them).
func (c *collector) sorted() []planparse.TypedResource {
	rs := make([]planparse.TypedResource, 0, len(c.byAddr))
	for _, r := range c.byAddr {
		slices.SortFunc(r.SeenIn, func(a, b string) int { return seenRank(a) - seenRank(b) })
		rs = append(rs, *r)
	}
	slices.SortFunc(rs, func(a, b planparse.TypedResource) int { return strings.Compare(a.Address, b.Address) })
	return rs
}

// managedSorted is the state's current managed instances, by address.
func (c *collector) managedSorted() []drift.Managed {
	slices.SortFunc(c.managed, func(a, b drift.Managed) int { return strings.Compare(a.Address, b.Address) })
	return c.managed
}

// resourceAddr is a resource's module-relative address: "TYPE.NAME" for a
// managed resource, "data.TYPE.NAME" for a data resource.
func resourceAddr(mode, typ, name string) string {
	if mode == modeData {
		return "data." + typ + "." + name
	}
	return typ + "." + name
}
