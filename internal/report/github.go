package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// GitHub Actions environment variables read by the audit command.
const (
	// EnvGitHubActions is "true" inside a GitHub Actions job.
	EnvGitHubActions = "GITHUB_ACTIONS"
	// EnvStepSummary names the file a step appends its Markdown summary to.
	EnvStepSummary = "GITHUB_STEP_SUMMARY"
	// EnvWorkspace is the repository's checkout: Report.SourceRoot.
	EnvWorkspace = "GITHUB_WORKSPACE"
)

// WriteGitHub reports r to GitHub Actions: one workflow command per counted
// finding and per errored workspace to w (the step's standard output; an
// error for drift, forbidden resources and errored workspaces, a warning
// for pending changes and state-backend findings), located like SARIF
// results (file relative to r.SourceRoot, empty: the working directory;
// no file when the block lies outside it), then the Markdown report appended to
// the file summaryPath ($GITHUB_STEP_SUMMARY; created with mode 0644 if
// missing, skipped when summaryPath is empty). Noise and ignored findings
// get no annotation. Messages carry no values.
func WriteGitHub(ctx context.Context, w io.Writer, summaryPath string, r *Report) error {
	lc, err := newLocator(r.SourceRoot)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, it := range items(ctx, r, lc) {
		b.WriteString(annotation(it))
	}
	_, werr := w.Write(b.Bytes())
	if werr != nil {
		werr = fmt.Errorf("annotations: %w", werr)
	}
	if summaryPath == "" {
		return werr
	}
	return errors.Join(werr, appendSummary(summaryPath, r))
}

// appendSummary appends r in Markdown to the file at path.
func appendSummary(path string, r *Report) error {
	var md bytes.Buffer
	if err := writeMarkdown(&md, r); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	if _, err := f.Write(md.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("step summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	return nil
}

// annotation is the workflow command line for one item:
// ::LEVEL file=F,line=N,title=T::MESSAGE, escaped by the workflow-command
// rules.
func annotation(it item) string {
	level := ruleFor(it.finding.Kind).level
	var props []string
	if it.loc.rel != "" {
		props = append(props, "file="+escapeProperty(it.loc.rel), "line="+strconv.Itoa(it.loc.line))
	}
	title := fmt.Sprintf("driftwatch %s in %s", it.finding.Kind, it.ws.Name)
	props = append(props, "title="+escapeProperty(title))
	return "::" + level + " " + strings.Join(props, ",") + "::" + escapeData(it.message()) + "\n"
}

// escapeData escapes a workflow command's message: %, CR and LF.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value: as data,
// plus : and , (which would end the value).
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
