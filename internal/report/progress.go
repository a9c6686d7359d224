package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Progress prints one line per workspace as it starts and ends. On a
// terminal it also keeps a live status line at the bottom (running
// workspaces, done/total, elapsed), redrawn every second.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	total   int
	done    int
	running map[string]time.Time
	start   time.Time
	stop    chan struct{}
	stopped chan struct{}
}

// NewProgress returns a progress display for total workspaces.
func NewProgress(w io.Writer, tty bool, total int) *Progress {
	p := &Progress{w: w, tty: tty, total: total, running: map[string]time.Time{}, start: time.Now(),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if tty {
		go p.ticker()
	} else {
		close(p.stopped)
	}
	return p
}

func (p *Progress) ticker() {
	defer close(p.stopped)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.redraw()
			p.mu.Unlock()
		}
	}
}

// Started records that a workspace began.
func (p *Progress) Started(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[name] = time.Now()
	p.line(fmt.Sprintf("[%d/%d] %s: started", p.done, p.total, name))
}

// Finished records a workspace's result.
func (p *Progress) Finished(r drift.Result) {
	p.Done(r.Workspace, r.Status, drift.CountFindings(r.Findings), r.Duration, r.Error)
}

// Done records that a workspace ended with status and counts after d
// (errText: the one-line reason of an errored one), for a result known
// by its counts only (a daemon's run).
func (p *Progress) Done(name string, status drift.Status, c drift.Counts, d time.Duration, errText string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, name)
	p.done++
	msg := fmt.Sprintf("[%d/%d] %s: %s", p.done, p.total, name, status)
	if status.Severity() >= 0 { // a verdict: cancelled and interrupted runs have no counts
		msg += fmt.Sprintf(" (drift %d, pending %d, forbidden %d", c.Drift, c.Pending, c.Forbidden)
		if c.Check > 0 {
			msg += fmt.Sprintf(", check %d", c.Check)
		}
		msg += ")"
	}
	msg += " in " + d.Round(100*time.Millisecond).String()
	if first, _, _ := strings.Cut(errText, "\n"); first != "" {
		msg += ": " + first
	}
	p.line(msg)
}

// Close stops the live display.
func (p *Progress) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// line prints a permanent line, keeping the live status line below it.
func (p *Progress) line(s string) {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, s)
	p.redraw()
}

func (p *Progress) redraw() {
	if !p.tty {
		return
	}
	names := make([]string, 0, len(p.running))
	for n := range p.running {
		names = append(names, n)
	}
	sort.Strings(names)
	run := strings.Join(names, ", ")
	if len(run) > 60 {
		run = run[:57] + "..."
	}
	fmt.Fprintf(p.w, "\r\033[K%d/%d done, %d running (%s) %s", p.done, p.total, len(names), run,
		time.Since(p.start).Round(time.Second))
}
