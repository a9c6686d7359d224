package refusal

import "errors"

// The kinds of refusal. Match them with errors.Is.
var (
	// ErrUnknownWorkspace: the workspace is not scheduled (not
	// configured).
	ErrUnknownWorkspace = errors.New("unknown workspace")
	// ErrBusy: a run of the workspace is already queued or running. A
	// *BusyError names that run.
	ErrBusy = errors.New("a run of this workspace is already queued or running")
	// ErrUnavailable: this daemon does not schedule (a leader-election
	// standby, starting or stopping). Its text should say why, and name
	// the leader when known.
	ErrUnavailable = errors.New("not scheduling")
)

// Kind is a new error whose text is text and that matches kind (one of
// the errors above): how a package declares a sentinel of its own that is
// also a refusal of that kind.
func Kind(text string, kind error) error { return &kindError{text: text, kind: kind} }

type kindError struct {
	text string
	kind error
}

func (e *kindError) Error() string { return e.text }
func (e *kindError) Unwrap() error { return e.kind }

// BusyError is an ErrBusy that names the run the workspace is busy with.
type BusyError struct {
	// RunID is the run already queued or running ("": none the API can
	// show, e.g. a remediation's apply or an adopted Job).
	RunID string
	// Err is the cause, for the log (nil: none).
	Err error
}

func (e *BusyError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	if e.RunID != "" {
		return ErrBusy.Error() + ": run " + e.RunID
	}
	return ErrBusy.Error()
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Unwrap returns the cause.
func (e *BusyError) Unwrap() error { return e.Err }
