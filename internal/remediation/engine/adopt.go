package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/drift/unmanaged"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/terraform/tfsession"
)

// Adopt generates the import blocks and configuration of the unmanaged
// resources named by their scan finding addresses (unmanaged.Address), and
// proves them: in a run directory of its own (the jail and environment of
// any run of the scan req), it runs the scan's query with
// -generate-config-out, writes the generated blocks of the named
// resources into the scratch copy (drift.AdoptFile) and plans it. The proof
// holds when the plan imports each of them and plans nothing else: no
// create, update, replace or delete (a generated attribute Terraform
// could not read back, such as a sensitive one written as null, shows as
// an update). Nothing is applied and no workspace's files are touched.
func Adopt(ctx context.Context, req terraform.Request, findings []string) (drift.AdoptOutcome, error) {
	var out drift.AdoptOutcome
	if req.Query == nil {
		return out, errors.New("not a scan: only a scan's unmanaged resources can be adopted")
	}
	if len(findings) == 0 {
		return out, errors.New("name the unmanaged resources to adopt (their finding addresses)")
	}
	ctx, marker, grace, end := sandbox.Begin(ctx, req)
	defer end()
	p, err := tfsession.Prepare(ctx, tfsession.PrepareOptions{
		Options:   tfsession.Options{Request: req, Log: req.Log, Grace: grace},
		DirPrefix: sandbox.ApplyDirPrefix,
		Marker:    marker,
	})
	if err != nil {
		return out, err
	}
	defer p.Close()
	tf := p.Session
	if len(req.Query.Lists) > 0 {
		if err := tfsession.WriteLists(p.ModuleDir, req.Query.Lists); err != nil {
			return out, err
		}
	}
	if err := tf.Init(ctx, tfsession.InitOptions{}); err != nil {
		return out, err
	}
	out.Tool = tf.Version(ctx)
	gen, err := tf.QueryGenerate(ctx, filepath.Join(p.Dir, "generated.tf"))
	if err != nil {
		return out, err
	}
	found := map[string]bool{}
	for _, g := range gen {
		addr := unmanaged.Address(g.Listed)
		if found[addr] || !slices.Contains(findings, addr) {
			continue
		}
		found[addr] = true
		if g.Import == "" || g.Config == "" {
			return out, fmt.Errorf("%s: Terraform generated no configuration for it", addr)
		}
		out.Adoptions = append(out.Adoptions, drift.Adoption{Finding: addr, Config: g.Config, Import: g.Import})
	}
	for _, f := range findings {
		if !found[f] {
			out.Missing = append(out.Missing, f)
		}
	}
	if len(out.Adoptions) == 0 {
		return out, errors.New("the scan's query lists none of the named resources")
	}
	if err := os.WriteFile(filepath.Join(p.ModuleDir, drift.AdoptFile), []byte(out.File()), 0o600); err != nil {
		return out, err
	}
	proof, _, err := planShow(ctx, tf, filepath.Join(p.Dir, "adopt.tfplan"))
	if err != nil {
		return out, fmt.Errorf("the proof plan of the generated configuration: %w", err)
	}
	imported := 0
	for _, c := range proof.Changes {
		if c.Action() == "import" {
			imported++
			continue
		}
		out.Remaining = append(out.Remaining, c.Address+": "+c.Action())
	}
	if imported != len(out.Adoptions) {
		out.Remaining = append(out.Remaining, fmt.Sprintf("%d of %d resources imported", imported, len(out.Adoptions)))
	}
	out.Proven = len(out.Remaining) == 0 && !proof.Errored
	return out, nil
}
