package tfsession

import (
	"bytes"
	"io"
	"sync"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// logRedactor redacts the secrets (secret env values, values of variables
// declared sensitive: sandbox.SensitiveValues) and the values of the
// workspace's vars from run logs.
//
// Limits: a value Terraform derives (a sensitive output of a data source,
// a computed attribute) is not known here (Terraform itself prints such
// values as "(sensitive value)"); values shorter than 4 bytes are left
// alone (they would shred ordinary text); a secret that spans a line break
// is not matched, since redaction is per line. Vars values are redacted
// whether or not they are sensitive: a region name shown as [REDACTED] is
// the cheaper mistake.
func logRedactor(secrets []string, vars map[string]string) sandbox.Redactor {
	all := append([]string(nil), secrets...)
	for _, v := range vars {
		all = append(all, v)
	}
	return sandbox.NewRedactor(all)
}

// runLog writes Terraform's output to a run's log (terraform.Request.Log) as
// complete, redacted lines. stdout and stderr have their own line buffers,
// so lines of the two streams never mix. With no log, it writes nothing.
type runLog struct {
	w        io.Writer
	red      sandbox.Redactor
	out, err *lineWriter
}

func newRunLog(w io.Writer, red sandbox.Redactor) *runLog {
	l := &runLog{w: w, red: red}
	if w != nil {
		l.out = &lineWriter{w: w, red: red}
		l.err = &lineWriter{w: w, red: red}
	}
	return l
}

// header starts a phase: "== init ==".
func (l *runLog) header(phase string) {
	if l.w == nil {
		return
	}
	l.flush()
	_, _ = l.w.Write([]byte("== " + phase + " ==\n"))
}

// stdout is the writer for a command's standard output.
func (l *runLog) stdout() io.Writer {
	if l.w == nil {
		return io.Discard
	}
	return l.out
}

// tee returns stderr, also copied to the log.
func (l *runLog) tee(stderr io.Writer) io.Writer {
	if l.w == nil {
		return stderr
	}
	return io.MultiWriter(stderr, l.err)
}

// flush writes partial last lines.
func (l *runLog) flush() {
	if l.w == nil {
		return
	}
	l.out.flush()
	l.err.flush()
}

// lineWriter buffers one stream and writes each complete line, redacted,
// in one Write.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	red sandbox.Redactor
	buf []byte
}

// maxLogLine bounds a line held back waiting for its newline.
const maxLogLine = 64 << 10

func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.buf = append(lw.buf, p...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			break
		}
		lw.emit(lw.buf[:i])
		lw.buf = lw.buf[i+1:]
	}
	if len(lw.buf) > maxLogLine {
		lw.emit(lw.buf)
		lw.buf = lw.buf[:0]
	}
	// Compact so the buffer does not grow with the output.
	lw.buf = append([]byte(nil), lw.buf...)
	return len(p), nil
}

func (lw *lineWriter) emit(line []byte) {
	// A log write error must not fail the run.
	_, _ = lw.w.Write([]byte(lw.red.Apply(string(line)) + "\n"))
}

func (lw *lineWriter) flush() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if len(lw.buf) > 0 {
		lw.emit(lw.buf)
		lw.buf = lw.buf[:0]
	}
}
