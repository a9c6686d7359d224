package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/version"
)

// kindErrored is the SARIF rule and GitHub annotation kind of a workspace
// that could not be audited (it is a status, not a finding kind).
const kindErrored drift.Kind = "errored"

// SARIF constants: the schema a log names and the uriBaseId its locations
// are relative to.
const (
	SARIFSchema  = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	SARIFVersion = "2.1.0"
	SARIFSrcRoot = "%SRCROOT%"
	// sarifFingerprint is the partialFingerprints key: a hash of the
	// workspace, the kind and the address, so a finding keeps its identity
	// across runs whatever line its block moves to.
	sarifFingerprint = "driftwatchFinding/v1"
)

// ruleInfo describes one SARIF rule: one per finding kind, plus errored.
type ruleInfo struct {
	kind        drift.Kind
	name, short string
	full, help  string
	level       string // SARIF level, also the annotation's command
}

// rules lists the kinds in the order of a SARIF log's rules. Drift,
// forbidden resources, a scan's unmanaged and doubly managed resources
// and errored workspaces are errors: they fail an
// audit, and so are failing checks (status validation, exit 2). Pending
// changes are warnings (the code is ahead of reality, by
// choice), and so are state-backend findings (hygiene, which never
// changes a workspace's status). Noise and ignored findings are not
// results at all.
var rules = []ruleInfo{
	{kind: drift.KindDrift, name: "ResourceDrift", level: "error",
		short: "Resource changed outside Terraform",
		full:  "The resource's real state no longer matches Terraform's state: it was changed outside Terraform. The result lists the changed attribute paths, never their values.",
		help:  "Bring the change into the code (then the plan is empty), or apply the workspace to revert it."},
	{kind: drift.KindForbidden, name: "ForbiddenResource", level: "error",
		short: "Resource type that Terraform must not manage",
		full:  "A resource of a type the policy reserves for another owner (for example GitOps) is in the workspace's configuration, state or plan.",
		help:  "Remove the resource from the configuration and the state and let its owner manage it, or change the policy's forbidden types."},
	{kind: drift.KindPending, name: "PendingChange", level: "warning",
		short: "Planned change not applied yet",
		full:  "The code differs from the state with no drift behind it: a change was made in the code but not applied.",
		help:  "Apply the workspace, or revert the code change."},
	{kind: drift.KindCheck, name: "FailingCheck", level: "error",
		short: "Check of the configuration failing",
		full:  "A check block's assertion, a resource's or output's condition or a variable's validation failed, or its result is unknown. The result is the check's message as its author wrote it.",
		help:  "Fix what the check tests (or the check itself); the result points at the check, output, variable or resource block."},
	{kind: drift.KindUnmanaged, name: "UnmanagedResource", level: "error",
		short: "Resource no workspace manages",
		full:  "A scan's list blocks found the resource, and no workspace's state holds it: it was made by hand or left behind. The result names its type and identity.",
		help:  "Import it into the workspace that should own it (the scan's import blocks), delete it, or add an ignore rule to the scan."},
	{kind: drift.KindManagedTwice, name: "ResourceManagedTwice", level: "error",
		short: "Resource two workspaces manage",
		full:  "A scan's list blocks found the resource in the states of two or more workspaces: each apply may undo the other's.",
		help:  "Remove it from all but one workspace's state (terraform state rm, or a removed block)."},
	{kind: drift.KindBackend, name: "StateBackendHygiene", level: "warning",
		short: "State backend hygiene",
		full:  "The state backend stores state unencrypted or unlocked, or its state files can be read by others. It never changes the workspace's status.",
		help:  "Fix the backend block as the result says (encryption, locking, file modes)."},
	{kind: kindErrored, name: "WorkspaceErrored", level: "error",
		short: "Workspace could not be audited",
		full:  "Initialising or planning the workspace failed, so whether it drifted is unknown.",
		help:  "Run driftwatch audit --workspace NAME --log-level debug to see why the run failed (the run's error is the message)."},
}

// ruleFor returns the rule of kind k: one of rules, or a warning rule made
// up for a kind this version does not know.
func ruleFor(k drift.Kind) ruleInfo {
	for _, r := range rules {
		if r.kind == k {
			return r
		}
	}
	return ruleInfo{kind: k, name: string(k), level: "warning", short: "driftwatch finding of kind " + string(k),
		full: "A driftwatch finding of kind " + string(k) + ".", help: "See the result's message."}
}

func ruleID(k drift.Kind) string { return "driftwatch/" + string(k) }

// item is one SARIF result or GitHub annotation: a counted finding, or an
// errored workspace (Finding.Kind kindErrored, no address).
type item struct {
	ws      *Workspace
	finding drift.Finding
	loc     place
}

// message is the item's one-line text: workspace, kind, address, action
// and attribute paths (never values; the report holds none).
func (it item) message() string {
	f := it.finding
	if f.Kind == kindErrored {
		return fmt.Sprintf("Workspace %q errored: %s", it.ws.Name, it.ws.Error)
	}
	msg := fmt.Sprintf("Workspace %q: %s on %s", it.ws.Name, f.Kind, f.Address)
	if f.Action != "" && f.Action != "none" {
		msg += " (" + f.Action + ")"
	}
	if a := attrs(f); a != "" {
		msg += ": " + a
	}
	return msg
}

// fingerprint identifies the item across runs: workspace, kind and
// address, and for a backend finding its detail too (one backend can have
// several); n > 0 tells apart items that would still share one.
func (it item) fingerprint(n int) string {
	key := it.ws.Name + "\x00" + string(it.finding.Kind) + "\x00" + it.finding.Address
	if it.finding.Kind == drift.KindBackend {
		key += "\x00" + it.finding.Detail
	}
	if n > 0 {
		key += fmt.Sprintf("\x00%d", n)
	}
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// items lists r's SARIF results and annotations in report order: each
// workspace's counted findings (noise and ignored ones are left out), then
// the workspace itself if it errored, each located in the source.
func items(ctx context.Context, r *Report, lc *locator) []item {
	var out []item
	for i := range r.Workspaces {
		ws := &r.Workspaces[i]
		for _, f := range counted(ws.Findings) {
			out = append(out, item{ws: ws, finding: f, loc: lc.find(ctx, ws, f.Address)})
		}
		if ws.Status == drift.StatusErrored {
			out = append(out, item{ws: ws, finding: drift.Finding{Kind: kindErrored}, loc: lc.find(ctx, ws, "")})
		}
	}
	return out
}

// place is a located item: rel is the file's slash path relative to the
// base directory ("" when the file lies outside it, then abs is used).
type place struct {
	rel, abs string
	line     int
}

// locator resolves addresses to places under one base directory.
type locator struct {
	base string
	src  *source.Locator
}

// newLocator returns a locator relative to baseDir (Report.SourceRoot;
// empty: the working directory).
func newLocator(baseDir string) (*locator, error) {
	if baseDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		baseDir = wd
	}
	abs, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, err
	}
	return &locator{base: abs, src: source.NewLocator()}, nil
}

// find locates address in ws's root module (the base directory itself
// when ws.SourceDir is unknown; relative to the base when relative).
func (lc *locator) find(ctx context.Context, ws *Workspace, address string) place {
	dir := ws.SourceDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(lc.base, dir)
	}
	loc := lc.src.Locate(ctx, dir, address)
	p := place{abs: filepath.Clean(loc.File), line: loc.Line}
	if rel, err := filepath.Rel(lc.base, p.abs); err == nil && filepath.IsLocal(rel) {
		p.rel = filepath.ToSlash(rel)
	}
	return p
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                        `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifactLocation `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult                    `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name    string      `json:"name"`
	Version string      `json:"version,omitempty"`
	Rules   []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	ShortDescription     sarifText       `json:"shortDescription"`
	FullDescription      sarifText       `json:"fullDescription"`
	Help                 sarifText       `json:"help"`
	DefaultConfiguration sarifRuleConfig `json:"defaultConfiguration"`
	Properties           map[string]any  `json:"properties,omitempty"`
}

type sarifRuleConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysicalLocation  `json:"physicalLocation"`
	LogicalLocations []sarifLogicalLocation `json:"logicalLocations,omitempty"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           sarifRegion           `json:"region"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogicalLocation struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// WriteSARIF renders r as a SARIF 2.1.0 log with one run: tool driftwatch
// with a rule per finding kind (driftwatch/drift, /forbidden, /pending,
// /check, /backend) and driftwatch/errored, and one result per counted finding and
// per errored workspace. Each result is located at the block that declares
// its resource, found by a static read of the workspace's source
// (Workspace.SourceDir; source.Locator), as a URI relative to
// r.SourceRoot (empty: the working directory) with uriBaseId %SRCROOT%,
// or as an absolute file URI when the file lies outside it. Its
// partialFingerprints hash the workspace, kind and address (and a backend
// finding's detail), so code scanning tracks a finding across runs
// whatever line its block moves to. Messages carry addresses, actions
// and attribute paths, never values.
func WriteSARIF(ctx context.Context, w io.Writer, r *Report) error {
	lc, err := newLocator(r.SourceRoot)
	if err != nil {
		return err
	}
	log := buildSARIF(items(ctx, r, lc), lc.base)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// buildSARIF is WriteSARIF's pure part.
func buildSARIF(its []item, base string) sarifLog {
	ver := version.Version
	driver := sarifDriver{Name: "driftwatch", Version: ver}
	index := map[drift.Kind]int{}
	addRule := func(ri ruleInfo) {
		index[ri.kind] = len(driver.Rules)
		help := sarifText{Text: ri.full + " " + ri.help, Markdown: ri.full + "\n\n" + ri.help}
		driver.Rules = append(driver.Rules, sarifRule{
			ID: ruleID(ri.kind), Name: ri.name,
			ShortDescription:     sarifText{Text: ri.short},
			FullDescription:      sarifText{Text: ri.full},
			Help:                 help,
			DefaultConfiguration: sarifRuleConfig{Level: ri.level},
			Properties:           map[string]any{"tags": []string{"terraform", "driftwatch"}},
		})
	}
	for _, ri := range rules {
		addRule(ri)
	}
	results := []sarifResult{}
	fingerprints := map[string]int{}
	for _, it := range its {
		fp := it.fingerprint(0)
		if n := fingerprints[fp]; n > 0 {
			fp = it.fingerprint(n)
		}
		fingerprints[it.fingerprint(0)]++
		k := it.finding.Kind
		if _, ok := index[k]; !ok {
			addRule(ruleFor(k))
		}
		art := sarifArtifactLocation{URI: (&url.URL{Path: it.loc.rel}).String(), URIBaseID: SARIFSrcRoot}
		if it.loc.rel == "" {
			art = sarifArtifactLocation{URI: fileURI(it.loc.abs, false)}
		}
		loc := sarifLocation{PhysicalLocation: sarifPhysicalLocation{ArtifactLocation: art, Region: sarifRegion{StartLine: it.loc.line}}}
		props := map[string]any{"workspace": it.ws.Name, "kind": string(k)}
		if k != kindErrored {
			loc.LogicalLocations = []sarifLogicalLocation{{FullyQualifiedName: it.finding.Address, Kind: "resource"}}
			props["address"] = it.finding.Address
			props["action"] = it.finding.Action
			props["attributes"] = nonNil(it.finding.Attributes)
		}
		results = append(results, sarifResult{
			RuleID: ruleID(k), RuleIndex: index[k], Level: ruleFor(k).level,
			Message:             sarifText{Text: it.message()},
			Locations:           []sarifLocation{loc},
			PartialFingerprints: map[string]string{sarifFingerprint: fp},
			Properties:          props,
		})
	}
	return sarifLog{Schema: SARIFSchema, Version: SARIFVersion, Runs: []sarifRun{{
		Tool:               sarifTool{Driver: driver},
		OriginalURIBaseIDs: map[string]sarifArtifactLocation{SARIFSrcRoot: {URI: fileURI(base, true)}},
		Results:            results,
	}}}
}

// fileURI is the file: URI of an absolute path, with a trailing slash for
// a directory (a base URI must end in one).
func fileURI(path string, dir bool) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path
	}
	if dir && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
