package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/drift/attribution"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Bounds of the attribution command per run: at most MaxAttributions
// drift findings first seen are asked about, attributionConcurrency at
// once; the others record why not.
const (
	MaxAttributions        = 20
	attributionConcurrency = 2
)

// Prior is what the caller recorded of the workspace before a run (the
// daemon's workspace state): it dates drift and keeps what earlier runs
// learnt of it.
type Prior struct {
	// Findings are the findings of its last successful run.
	Findings []drift.Finding
	// CheckedAt is when that run checked (its start).
	CheckedAt time.Time
}

// windows sets the window of every drift finding of fs, given prior: one
// a previous run already saw (a drift finding of prior at the same
// address) keeps that finding's window, attribution and attribution error
// (a finding recorded before windows existed gets one that ends at
// prior's check); one first seen gets the window from prior's check to
// to. Without prior (the one-shot audit: no history) no finding gets a
// window and every drift finding is first seen. It returns the indexes of
// the drift findings first seen that are not ignored: those the
// attribution command is asked about.
func windows(prior *Prior, fs []drift.Finding, to time.Time) (fresh []int) {
	seen := map[string]drift.Finding{}
	if prior != nil {
		for _, f := range prior.Findings {
			if f.Kind == drift.KindDrift {
				seen[f.Address] = f
			}
		}
	}
	for i := range fs {
		f := &fs[i]
		if f.Kind != drift.KindDrift {
			continue
		}
		p, ok := seen[f.Address]
		if !ok {
			if prior != nil {
				f.Window = &drift.Window{From: prior.CheckedAt, To: to}
			}
			if !f.Ignored {
				fresh = append(fresh, i)
			}
			continue
		}
		f.Window, f.Attribution, f.AttributionError = p.Window, p.Attribution, p.AttributionError
		if f.Window == nil {
			f.Window = &drift.Window{To: prior.CheckedAt}
		}
	}
	return fresh
}

// attribute asks t's attribution command about the drift findings of fs
// at the indexes fresh, with their window (without one: the window that
// ends at now): at most MaxAttributions, two at a time. An answer
// is set as the finding's Attribution; a failure, logged, as its
// AttributionError ("attribution failed: …", redacted of the command's
// env and every secret the run knows). It never fails the run.
func attribute(ctx context.Context, log *slog.Logger, t Target, plan *planparse.Plan, fs []drift.Finding, fresh []int, now time.Time) {
	if t.Attribution == nil || len(fresh) == 0 {
		return
	}
	red := sandbox.NewRedactor(t.Request.Redact)
	fail := func(f *drift.Finding, why string) {
		f.AttributionError = drift.CapDetail("attribution failed: " + red.Apply(why))
		log.Warn("attribution failed", "address", f.Address, "err", f.AttributionError)
	}
	cmd, err := command(*t.Attribution)
	if err != nil {
		for _, i := range fresh {
			fail(&fs[i], err.Error())
		}
		return
	}
	drifted := map[string]planparse.Change{}
	if plan != nil {
		for _, c := range plan.Drift {
			if c.Deposed == "" {
				drifted[c.Address] = c
			}
		}
	}
	sem := make(chan struct{}, attributionConcurrency)
	var wg sync.WaitGroup
	for n, i := range fresh {
		f := &fs[i]
		if n >= MaxAttributions {
			f.AttributionError = fmt.Sprintf("attribution skipped: more than %d drift findings first seen in one run", MaxAttributions)
			continue
		}
		c := drifted[f.Address]
		w := drift.Window{To: now}
		if f.Window != nil {
			w = *f.Window
		}
		q := attribution.Query{Workspace: t.Name, Address: f.Address, Type: f.Type, Provider: c.Provider, IDs: c.IDs,
			Window: attribution.Window{From: w.From, To: w.To}}
		if q.IDs == nil {
			q.IDs = map[string]string{}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ans, err := cmd.Ask(ctx, q)
			if err != nil {
				fail(f, err.Error())
				return
			}
			f.Attribution = &drift.Attribution{Actor: ans.Actor, Time: ans.Time, Source: ans.Source, EventID: ans.EventID, URL: ans.URL}
		}()
	}
	wg.Wait()
}

// command is the attribution.Command of a, its secret env files read now
// (a rotated secret is used at the next call). An error names the
// variable, never a value.
func command(a config.AttributionCommand) (attribution.Command, error) {
	env := make(map[string]string, len(a.Env)+len(a.SecretEnvFiles))
	for k, v := range a.Env {
		env[k] = v
	}
	for k, file := range a.SecretEnvFiles {
		b, err := os.ReadFile(file)
		if err != nil {
			return attribution.Command{}, fmt.Errorf("secret_env_files.%s: cannot read its file", k)
		}
		env[k] = strings.TrimRight(string(b), "\r\n")
	}
	return attribution.Command{Argv: a.Argv, Env: env, Timeout: a.Timeout}, nil
}
