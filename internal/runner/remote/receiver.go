package remote

import (
	"compress/gzip"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Route is the ServeMux pattern the Receiver is served on, by a
// CallbackServer. The Receiver reads the run id from the {id} wildcard.
const Route = "POST /internal/v1/runs/{id}/result"

// ResultPath returns the path of runID's result endpoint (Route's path).
func ResultPath(runID string) string {
	return "/internal/v1/runs/" + url.PathEscape(runID) + "/result"
}

// DefaultMaxBodyBytes bounds a result, compressed and decompressed: a parsed
// plan of 10,000 resources is a few MB of addresses and paths.
const DefaultMaxBodyBytes = 16 << 20

// tombstoneTTL is how long a finished run's entry outlives its deadline, so
// that a late or conflicting post gets a clear 410/409 rather than 403.
const tombstoneTTL = time.Hour

// refusedCredential is the one answer (403) to a post or check for a run
// this Receiver does not know and to one with the wrong token: telling
// them apart would let anyone probe which runs exist.
const refusedCredential = "unknown run or invalid token"

// ErrConflictingResults is the Conflict of a Delivery: after a run's result
// was accepted, a different one was posted with the run's token. One of the
// two is forged (the token leaked), and neither may stand as the verdict.
var ErrConflictingResults = errors.New("conflicting results posted: possible forgery")

// Delivery is what the channel Expect returns carries: first the accepted
// Result; then, only if a different result is posted for the run with its
// token afterwards, a second Delivery whose Conflict is
// ErrConflictingResults. An awaiter therefore holds a result until its pod
// is known to have finished well (see runner/kube), and drops it on a
// conflict.
type Delivery struct {
	Result   Result
	Conflict error
}

// ReceiverOptions configures a Receiver.
type ReceiverOptions struct {
	// MaxBodyBytes bounds a result body, before and after gzip
	// (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger records refused deliveries (default: discard).
	Logger *slog.Logger
	// Proceed answers remediation pods' proceed checks (ProceedHandler);
	// nil answers every check 501, which the pod takes as a refusal.
	Proceed ProceedFunc
}

// Receiver is the daemon's end of result delivery: an http.Handler for
// Route that hands each run's result to the channel Expect returned.
type Receiver struct {
	maxBody int64
	now     func() time.Time
	log     *slog.Logger
	proceed ProceedFunc

	mu   sync.Mutex
	runs map[string]*expectation
}

type expectation struct {
	hash    [32]byte
	expires time.Time
	ch      chan Delivery // buffered 2 (a result, a conflict); nil once forgotten
	used    bool          // a result was accepted with this token
	// sum is the SHA-256 of the accepted result's canonical JSON: the same
	// result re-posted (a retry whose response was lost) is answered 204
	// again, a different one is a conflict.
	sum      [32]byte
	conflict bool // a conflict was reported (once)
	// sink takes the run's log (LogHandler) into its live log
	// (AttachLog); it outlives a re-arming, so the pod's line numbers
	// carry on.
	sink *logSink
}

// NewReceiver returns an empty Receiver.
func NewReceiver(o ReceiverOptions) *Receiver {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Receiver{maxBody: o.MaxBodyBytes, now: o.Now, log: o.Logger, proceed: o.Proceed, runs: map[string]*expectation{}}
}

// ErrAlreadyExpected is returned by Expect for a run that is awaited already.
var ErrAlreadyExpected = errors.New("run is already awaiting its result")

// Expect arms the Receiver for runID: one result authenticated by the token
// whose hash is given, until expires. The result arrives on the returned
// channel (buffered, so delivery never waits for the reader), followed by a
// conflict Delivery if a different result is posted with the token later.
// Call Forget when the run no longer waits. Re-arming a forgotten run with
// the same hash keeps it single use: a token that delivered once never
// delivers again.
func (r *Receiver) Expect(runID string, hash [32]byte, expires time.Time) (<-chan Delivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.purgeLocked()
	if e, ok := r.runs[runID]; ok {
		if e.ch != nil {
			return nil, fmt.Errorf("run %s: %w", runID, ErrAlreadyExpected)
		}
		if !e.used || e.hash != hash {
			e.used, e.sum, e.conflict = false, [32]byte{}, false
		}
		e.hash, e.expires, e.ch = hash, expires, make(chan Delivery, 2)
		return e.ch, nil
	}
	e := &expectation{hash: hash, expires: expires, ch: make(chan Delivery, 2), sink: &logSink{}}
	r.runs[runID] = e
	return e.ch, nil
}

// Forget stops awaiting runID and detaches its log (AttachLog). Its entry
// stays until an hour after its deadline, so a late or conflicting
// delivery is refused as such (410, 409) and an identical re-post is still
// answered 204.
func (r *Receiver) Forget(runID string) {
	r.mu.Lock()
	e, ok := r.runs[runID]
	if ok {
		e.ch = nil
	}
	r.mu.Unlock()
	if ok {
		e.sink.detach()
	}
}

// purgeLocked drops forgotten entries past their tombstone time.
func (r *Receiver) purgeLocked() {
	now := r.now()
	for id, e := range r.runs {
		if e.ch == nil && now.After(e.expires.Add(tombstoneTTL)) {
			delete(r.runs, id)
		}
	}
}

// ServeHTTP accepts one run's result. Status codes: 204 accepted (and again
// for an identical re-post: a retry whose response was lost), 401 no bearer
// token, 403 unknown run or wrong token (one answer for both: the endpoint
// does not tell which runs exist), 409 a different result was delivered
// already (reported to the awaiter as a conflict: one of the two is
// forged), 410 deadline passed or no longer awaited, 413 too large, 415 not
// JSON or an unknown encoding, 400 malformed.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	refuse := r.refuser(w, req, "run result refused")
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	runID := req.PathValue("id")
	want, _, ok := r.authorize(w, req, refuse)
	if !ok {
		return
	}

	res, sum, code, err := r.decode(w, req, runID)
	if err != nil {
		refuse(code, err.Error())
		return
	}

	r.mu.Lock()
	e, known := r.runs[runID]
	switch {
	case !known || e.hash != want:
		r.mu.Unlock()
		refuse(http.StatusGone, "run no longer awaits a result")
		return
	case e.used && e.sum == sum:
		r.mu.Unlock()
		r.log.Info("identical run result posted again (a retry): accepted again", "run_id", runID)
		w.WriteHeader(http.StatusNoContent)
		return
	case e.used:
		first, awaited := !e.conflict, e.ch != nil
		if first && awaited {
			// Never blocks: buffered 2, one result and one conflict at most.
			e.ch <- Delivery{Conflict: ErrConflictingResults}
		}
		e.conflict = true
		r.mu.Unlock()
		// Someone else holds this run's token: whichever came first, the
		// run must not keep it as its verdict (the awaiter drops it; an
		// awaiter that already took it took it once its pod had
		// succeeded, i.e. from the reporter itself).
		r.log.Error("conflicting results posted for one run: possible forgery (its token leaked)",
			"run_id", runID, "remote_addr", req.RemoteAddr, "awaited", awaited)
		http.Error(w, "a different result was delivered for this run already", http.StatusConflict)
		return
	case e.ch == nil:
		r.mu.Unlock()
		refuse(http.StatusGone, "run no longer awaits a result")
		return
	}
	e.used, e.sum = true, sum
	e.ch <- Delivery{Result: res} // never blocks: buffered 2 and used guards it
	r.mu.Unlock()
	r.log.Debug("run result accepted", "run_id", runID, "failed", res.Error != nil)
	w.WriteHeader(http.StatusNoContent)
}

// refuser returns the function that answers req with an error status and
// reason, and logs it as msg (with detail, if given, as the reason: the
// log may say more than the answer).
func (r *Receiver) refuser(w http.ResponseWriter, req *http.Request, msg string) func(code int, reason string, detail ...string) {
	log := r.log.With("run_id", req.PathValue("id"), "remote_addr", req.RemoteAddr)
	return func(code int, reason string, detail ...string) {
		// A bad credential is worth a warning; the rest happens in normal
		// operation (a pod retrying while the daemon restarts, a late post).
		level := slog.LevelInfo
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			level = slog.LevelWarn
		}
		logged := reason
		if len(detail) > 0 {
			logged = strings.Join(detail, ": ")
		}
		log.Log(req.Context(), level, msg, "status", code, "reason", logged)
		http.Error(w, reason, code)
	}
}

// authorize checks req's bearer token against its run's; it returns the
// token hash and whether the run's result was delivered already, or
// refuses req: 401 no token; 403, with one body, for an unknown run or a
// wrong token (timing alike: both compare hashes); for a run whose result
// is not delivered yet, 410 deadline passed or no longer awaited. It
// consumes nothing.
func (r *Receiver) authorize(w http.ResponseWriter, req *http.Request, refuse func(int, string, ...string)) (hash [32]byte, used, ok bool) {
	runID := req.PathValue("id")
	token, ok := bearer(req.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="driftwatch-run"`)
		refuse(http.StatusUnauthorized, "bearer token required")
		return [32]byte{}, false, false
	}
	got := HashToken(token)

	r.mu.Lock()
	e, known := r.runs[runID]
	var want [32]byte
	var awaited bool
	var expires time.Time
	if known {
		want, used, awaited, expires = e.hash, e.used, e.ch != nil, e.expires
	}
	r.mu.Unlock()

	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	switch {
	case runID == "" || !known:
		refuse(http.StatusForbidden, refusedCredential, "unknown run")
	case !match:
		refuse(http.StatusForbidden, refusedCredential, "invalid token")
	case used:
		return want, true, true
	case r.now().After(expires):
		refuse(http.StatusGone, "run deadline passed")
	case !awaited:
		refuse(http.StatusGone, "run no longer awaits a result")
	default:
		return want, false, true
	}
	return [32]byte{}, false, false
}

// admit lets through a request to a route that consumes nothing (the
// proceed check, the log): method, then the token (authorize); a run whose
// result is delivered is refused 409 with closed. Refused, req is answered
// (and logged as msg) and ok is false; else refuse answers it later.
func (r *Receiver) admit(w http.ResponseWriter, req *http.Request, method, msg, closed string) (refuse func(int, string, ...string), ok bool) {
	refuse = r.refuser(w, req, msg)
	if req.Method != method {
		w.Header().Set("Allow", method)
		refuse(http.StatusMethodNotAllowed, "method not allowed")
		return nil, false
	}
	_, used, ok := r.authorize(w, req, refuse)
	if !ok {
		return nil, false
	}
	if used {
		refuse(http.StatusConflict, closed)
		return nil, false
	}
	return refuse, true
}

// decode reads the body: JSON, identity or gzip, bounded before and after
// decompression. It returns the result and the SHA-256 of its canonical
// JSON.
func (r *Receiver) decode(w http.ResponseWriter, req *http.Request, runID string) (Result, [32]byte, int, error) {
	b, code, err := readBody(w, req, r.maxBody)
	if err != nil {
		return Result{}, [32]byte{}, code, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return Result{}, [32]byte{}, http.StatusBadRequest, fmt.Errorf("decode result: %w", err)
	}
	if err := res.validate(runID); err != nil {
		return Result{}, [32]byte{}, http.StatusBadRequest, err
	}
	// The result's canonical form (encoding/json sorts map keys): the same
	// result re-posted is recognised however it was encoded.
	canon, err := json.Marshal(res)
	if err != nil {
		return Result{}, [32]byte{}, http.StatusBadRequest, fmt.Errorf("encode result: %w", err)
	}
	return res, sha256.Sum256(canon), 0, nil
}

// readBody reads a JSON body, identity or gzip, bounded by limit before
// and after decompression; on error it returns the status to answer.
func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, int, error) {
	if ct := req.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, http.StatusUnsupportedMediaType, errors.New("content type must be application/json")
		}
	}
	if req.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body larger than %d bytes", limit)
	}
	body := http.MaxBytesReader(w, req.Body, limit)
	var in io.Reader = body
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, statusFor(err), fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		in = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q not supported", enc)
	}
	// Read whole (bounded) before decoding, so a too-large body is told
	// apart from a malformed one.
	b, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, statusFor(err), fmt.Errorf("read body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("decompressed body larger than %d bytes", limit)
	}
	return b, 0, nil
}

func statusFor(err error) int {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
