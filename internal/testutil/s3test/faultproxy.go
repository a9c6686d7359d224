package s3test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Kind is what a FaultProxy does to a request a fault applies to.
type Kind int

const (
	// Pass forwards every request: no fault.
	Pass Kind = iota
	// Refuse closes the listening socket (and every open connection): a
	// new connection is refused, as when the endpoint goes down. Without
	// KeySuffix, Method or After it strikes at once; with them, at the
	// first request they select (which is reset), so that an outage can
	// begin at a chosen moment of a run: the apply's state write, say.
	// Either way it then applies to every request until the next Set.
	Refuse
	// Reset accepts the request and resets the connection without an
	// answer (TCP RST), as a dropping firewall or a crashed server does.
	Reset
	// Error500 answers 500 InternalError, S3's own error document, without
	// forwarding: the store is reachable but failing.
	Error500
	// Slow forwards the request and holds the answer back for Fault.Delay.
	Slow
)

func (k Kind) String() string {
	switch k {
	case Pass:
		return "pass"
	case Refuse:
		return "refuse"
	case Reset:
		return "reset"
	case Error500:
		return "500"
	case Slow:
		return "slow"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Fault is what a FaultProxy injects from now on.
type Fault struct {
	Kind Kind
	// N limits Reset and Error500 to the next N requests the fault
	// applies to; the proxy passes everything after them. 0: every one.
	N int
	// Delay is how long Slow holds each answer back.
	Delay time.Duration
	// KeySuffix limits the fault to requests for an object key ending in
	// it (".tfstate" for the state object, ".tflock" for its lock file);
	// other requests pass. "": every request.
	KeySuffix string
	// Method limits the fault to requests with this method ("PUT"); "":
	// every method.
	Method string
	// After lets the first After requests the fault applies to pass
	// untouched: a fault that strikes mid-run, once init has read the
	// state, say. Not for Refuse, which strikes at once.
	After int
}

// Request is one request that reached a FaultProxy, and what it did.
type Request struct {
	Method string
	// Key is the object key, "" for a request on the bucket (a listing).
	Key string
	// Fault is the fault injected, Pass if it was forwarded untouched.
	Fault Kind
	// Status is the answer's status (0: none, the connection was reset
	// or the client gave up).
	Status int
}

// FaultProxy is a reverse proxy on 127.0.0.1 in front of a Server's S3
// endpoint that injects the faults a state backend meets in production:
// an endpoint that is down, connections reset, 500s and slow answers,
// switched at run time while Terraform talks to it. Give Terraform URL
// as its endpoint; the Server's own client (Get, Put, …) still talks to
// the store directly, so a test can look at the truth behind the faults.
//
// Requests are forwarded unchanged, Host header included: the client's
// SigV4 signature covers the host it sent to, which is the proxy's.
type FaultProxy struct {
	// URL is the proxy's endpoint, http://127.0.0.1:PORT; it stays the
	// same across Refuse and recovery.
	URL string

	addr    string
	bucket  string
	forward *httputil.ReverseProxy

	mu       sync.Mutex
	ln       net.Listener // nil while refusing
	srv      *http.Server
	conns    map[net.Conn]struct{}
	fault    Fault
	left     int // with fault.N > 0: how many more to inject
	passed   int // requests the fault applied to that passed (Fault.After)
	requests []Request
	closed   chan struct{}
	wg       sync.WaitGroup
}

// StartFaultProxy starts a proxy to srv on a free 127.0.0.1 port, passing
// everything, and registers its stop with t.Cleanup.
func StartFaultProxy(t testing.TB, srv *Server) *FaultProxy {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{bucket: srv.Bucket, conns: map[net.Conn]struct{}{}, closed: make(chan struct{})}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // signed by the client
		},
		// A failed forward is the store's fault, not one injected: say so
		// in the status (502) and nowhere else.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	// Below the ephemeral range (freePorts), so that no outgoing
	// connection takes the port while a Refuse has it closed.
	var ln net.Listener
	for tries := 0; ln == nil; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+freePorts(t, 1)[0])
		if err != nil && tries == 10 {
			t.Fatal(err)
		}
		ln = l
	}
	p.addr = ln.Addr().String()
	p.URL = "http://" + p.addr
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

// serve starts an HTTP server on ln. Called with mu not held.
func (p *FaultProxy) serve(ln net.Listener) {
	srv := &http.Server{
		Handler:           http.HandlerFunc(p.handle),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, s http.ConnState) {
			p.mu.Lock()
			defer p.mu.Unlock()
			switch s {
			case http.StateNew:
				p.conns[c] = struct{}{}
			case http.StateClosed, http.StateHijacked:
				delete(p.conns, c)
			}
		},
	}
	p.mu.Lock()
	p.ln, p.srv = ln, srv
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = srv.Serve(ln)
	}()
}

// Set injects f from now on (Fault{} passes everything again). Leaving
// an outage (Refuse) listens again on the same port; the error says if
// that failed.
func (p *FaultProxy) Set(f Fault) error {
	p.mu.Lock()
	p.fault, p.left, p.passed = f, f.N, 0
	refusing := p.ln == nil
	p.mu.Unlock()
	if f.Kind == Refuse && !f.triggered() {
		p.down()
		return nil
	}
	if refusing {
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("listen again on %s: %w", p.addr, err)
		}
		p.serve(ln)
	}
	return nil
}

// triggered reports whether a Refuse waits for a request to strike.
func (f Fault) triggered() bool { return f.KeySuffix != "" || f.Method != "" || f.After > 0 }

// down closes the listener and every open connection: the endpoint is
// gone. Close, not Shutdown: requests in flight die with their
// connections, as they do when a server goes away.
func (p *FaultProxy) down() {
	p.mu.Lock()
	srv := p.srv
	p.ln, p.srv = nil, nil
	var conns []net.Conn
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}

// MustSet is Set, failing the test on error.
func (p *FaultProxy) MustSet(t testing.TB, f Fault) {
	t.Helper()
	if err := p.Set(f); err != nil {
		t.Fatal(err)
	}
}

// Requests returns the requests that reached the proxy so far, in order.
func (p *FaultProxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Count returns how many requests with method ("": any) for a key ending
// in suffix ("": any) reached the proxy.
func (p *FaultProxy) Count(method, suffix string) int {
	n := 0
	for _, r := range p.Requests() {
		if (method == "" || r.Method == method) && strings.HasSuffix(r.Key, suffix) {
			n++
		}
	}
	return n
}

// CountByMethod returns the requests that reached the proxy per method.
func (p *FaultProxy) CountByMethod() map[string]int {
	out := map[string]int{}
	for _, r := range p.Requests() {
		out[r.Method]++
	}
	return out
}

// Injected returns how many requests got a fault (Reset, Error500 or Slow).
func (p *FaultProxy) Injected() int {
	n := 0
	for _, r := range p.Requests() {
		if r.Fault != Pass {
			n++
		}
	}
	return n
}

// key is the object key of a path-style request ("" for the bucket).
func (p *FaultProxy) key(r *http.Request) string {
	k, _ := strings.CutPrefix(r.URL.Path, "/"+p.bucket)
	return strings.TrimPrefix(k, "/")
}

// take decides the fault for one request and records it; it returns the
// request's index in the record.
func (p *FaultProxy) take(method, key string) (Fault, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fault
	switch {
	case f.Kind == Pass, f.Kind == Refuse && (!f.triggered() || p.ln == nil):
		f = Fault{}
	case f.KeySuffix != "" && (key == "" || !strings.HasSuffix(key, f.KeySuffix)):
		f = Fault{}
	case f.Method != "" && method != f.Method:
		f = Fault{}
	case p.passed < f.After:
		p.passed++
		f = Fault{}
	case f.N > 0:
		if p.left == 0 {
			f = Fault{}
		} else {
			p.left--
		}
	}
	p.requests = append(p.requests, Request{Method: method, Key: key, Fault: f.Kind})
	return f, len(p.requests) - 1
}

func (p *FaultProxy) answered(i, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[i].Status = status
}

func (p *FaultProxy) handle(w http.ResponseWriter, r *http.Request) {
	key := p.key(r)
	f, i := p.take(r.Method, key)
	switch f.Kind {
	case Refuse:
		// The outage begins with this request: the listener is closed
		// before the client reads its reset, so whatever it sends next
		// is refused, however late this goroutine runs.
		c := hijack(w)
		p.down()
		reset(c)
		return
	case Reset:
		reset(hijack(w))
		return
	case Error500:
		p.answered(i, http.StatusInternalServerError)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message><Resource>/%s/%s</Resource><RequestId>faultproxy-%d</RequestId></Error>`,
			p.bucket, key, i)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	if f.Kind == Slow && f.Delay > 0 {
		// Hold the answer, not the request: the store has done the work
		// (a slow write still lands), the client waits.
		sw.delay, sw.closed, sw.ctx = f.Delay, p.closed, r.Context().Done()
	}
	p.forward.ServeHTTP(sw, r)
	p.answered(i, sw.status)
}

// hijack takes the request's connection from the server, which no
// longer tracks or closes it.
func hijack(w http.ResponseWriter) net.Conn {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	return c
}

// reset closes c with SO_LINGER 0: the client reads a TCP RST, no answer.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// statusWriter records the status and, with delay set, holds the answer
// back until delay passed, the client gave up or the proxy stopped.
type statusWriter struct {
	http.ResponseWriter
	status int
	delay  time.Duration
	closed <-chan struct{}
	ctx    <-chan struct{}
	held   bool
}

func (s *statusWriter) hold() {
	if s.delay <= 0 || s.held {
		return
	}
	s.held = true
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx:
	case <-s.closed:
	}
}

func (s *statusWriter) WriteHeader(code int) {
	if code < 200 {
		s.ResponseWriter.WriteHeader(code) // informational: the answer is yet to come
		return
	}
	s.hold()
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Flush lets the reverse proxy stream a body.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// stop closes the proxy and waits for its server to end.
func (p *FaultProxy) stop() {
	p.mu.Lock()
	select {
	case <-p.closed:
	default:
		close(p.closed)
	}
	srv := p.srv
	p.ln, p.srv = nil, nil
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	p.wg.Wait()
}
