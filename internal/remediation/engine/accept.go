package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/terraform/tfsession"
)

// AcceptOutcome is what accepting a workspace's drift as code came to.
type AcceptOutcome struct {
	// Tool is the Terraform version that planned, Commit the source's
	// commit (git sources).
	Tool, Commit string
	// Change is the code change and what it accepts and refuses; nil when
	// the plan had no drift to accept or a step failed.
	Change *accept.Result
	// Proven is set when a plan of the changed code has no change for the
	// accepted addresses (but the forget of an accepted deletion) and no
	// change the first plan did not have.
	Proven bool
	// Remaining lists, when not proven, the proof plan's changes that keep
	// it from proving: "ADDRESS: ACTION", a person's reading.
	Remaining []string
}

// AcceptScope is what an acceptance accepts: the drift of Addresses (or
// all of it) and, with Deletions, resources deleted outside Terraform
// (accept.Request.Deletions).
type AcceptScope struct {
	Addresses []string
	Deletions bool
}

// Accept computes the code change that accepts the drift of req's
// workspace that scope names, and proves it: in a run directory of its
// own (tfsession.Prepare, the jail and environment of any run) it plans
// without the state lock, traces the drift to the code (accept.Compute),
// changes the run's copy of the source and plans again.
// Nothing is applied and the workspace's own files are not touched: the
// caller proposes Change (its Patch, or its files) once Proven.
//
// The first plan's values (show -json) stay in memory: the change holds
// the drifted values, never a sensitive one (accept refuses those), and
// the log gets what a detection's gets, without values.
func Accept(ctx context.Context, req terraform.Request, scope AcceptScope) (AcceptOutcome, error) {
	var out AcceptOutcome
	ctx, marker, grace, end := sandbox.Begin(ctx, req)
	defer end()
	p, err := tfsession.Prepare(ctx, tfsession.PrepareOptions{
		Options:   tfsession.Options{Request: req, Log: req.Log, Grace: grace},
		DirPrefix: sandbox.ApplyDirPrefix,
		Marker:    marker,
		Sourced:   func(p *tfsession.Prepared) { out.Commit = p.Commit },
	})
	if err != nil {
		return out, err
	}
	defer p.Close()
	tf := p.Session
	if err := tf.Init(ctx, tfsession.InitOptions{}); err != nil {
		return out, err
	}
	out.Tool = tf.Version(ctx)
	if err := tf.WorkspaceSelect(ctx); err != nil {
		return out, err
	}
	first, raw, err := planShow(ctx, tf, filepath.Join(p.Dir, "accept.tfplan"))
	if err != nil {
		return out, err
	}
	// Drift the plan does not set back (the code already says what
	// exists, or ignore_changes) is nothing to accept.
	sets := map[string]bool{}
	for _, c := range first.Changes {
		sets[c.Address] = true
	}
	raw.ResourceDrift = slices.DeleteFunc(raw.ResourceDrift, func(rc *tfjson.ResourceChange) bool { return rc == nil || !sets[rc.Address] })
	if len(raw.ResourceDrift) == 0 {
		return out, errors.New("the plan shows no drift to accept")
	}
	change, err := accept.Compute(accept.Request{Dir: p.ModuleDir, VarFiles: req.VarFiles, Plan: raw,
		Addresses: scope.Addresses, Deletions: scope.Deletions, Tool: out.Tool})
	if err != nil {
		return out, err
	}
	out.Change = change
	if len(change.Accepted) == 0 {
		return out, nil
	}
	if err := change.Apply(); err != nil {
		return out, err
	}
	proof, _, err := planShow(ctx, tf, filepath.Join(p.Dir, "proof.tfplan"))
	if err != nil {
		return out, fmt.Errorf("the proof plan of the changed code: %w", err)
	}
	out.Remaining = remaining(first, proof, change.Accepted)
	out.Proven = len(out.Remaining) == 0 && !proof.Errored
	return out, nil
}

// planShow plans into file and reads it: parsed, and decoded whole
// (values and all) for accept.
func planShow(ctx context.Context, tf *tfsession.Session, file string) (*planparse.Plan, *tfjson.Plan, error) {
	if _, err := tf.Plan(ctx, tfsession.PlanOptions{Out: file, JSON: true}); err != nil {
		return nil, nil, err
	}
	var raw tfjson.Plan
	plan, err := tf.Show(ctx, file, func(r io.Reader) error { return json.NewDecoder(r).Decode(&raw) })
	if err != nil {
		return nil, nil, err
	}
	return plan, &raw, nil
}

// remaining is what keeps the proof plan from proving the change: a
// planned change of an accepted address, or a change the first plan did
// not have (with the same actions). An accepted deletion (a removed
// block) is proven by no change or a forget: a removed block of an
// object already gone plans a forget with Terraform (dropping it from
// the state, nothing in the world) and nothing with OpenTofu.
func remaining(first, proof *planparse.Plan, accepted []accept.Accepted) []string {
	was := map[string][]string{}
	for _, c := range first.Changes {
		was[c.Address] = c.Actions
	}
	isAccepted, removed := map[string]bool{}, map[string]bool{}
	for _, a := range accepted {
		isAccepted[a.Address] = true
		removed[a.Address] = removed[a.Address] || a.Kind == accept.KindRemoved
	}
	var out []string
	for _, c := range proof.Changes {
		switch acts, ok := was[c.Address]; {
		case removed[c.Address] && c.Action() == string(tfjson.ActionForget):
			// What accepting the deletion means.
		case isAccepted[c.Address]:
			out = append(out, fmt.Sprintf("%s: still %s (the changed code does not produce what exists)", c.Address, c.Action()))
		case !ok || !slices.Equal(acts, c.Actions):
			out = append(out, fmt.Sprintf("%s: %s, which the change brings", c.Address, c.Action()))
		}
	}
	return out
}
