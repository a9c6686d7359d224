package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

const (
	// envAuditLog names the audit log when no -audit-log flag is given.
	envAuditLog = "DRIFTWATCH_AUDIT_LOG"
	// source is the answer's source.
	source = "kubernetes-audit"
	// maxQuery bounds the query read from stdin.
	maxQuery = 1 << 20
	// maxLine skips audit events longer than this (a RequestResponse
	// event of a huge object).
	maxLine = 8 << 20
)

// Exit codes.
const (
	exitFound    = 0
	exitNotFound = 1
	exitUsage    = 2
)

// changingVerbs are the audit verbs that change an object.
var changingVerbs = []string{"create", "update", "patch", "delete"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// run is the whole program: flags, the query on stdin, the answer on
// stdout, one line on stderr when there is none.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "driftwatch-attribute-kube: "+format+"\n", a...)
		return code
	}
	fs := flag.NewFlagSet("driftwatch-attribute-kube", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var logs listFlag
	fs.Var(&logs, "audit-log", "a Kubernetes audit log file (JSON lines); repeat for rotated files (default $"+envAuditLog+")")
	if err := fs.Parse(args); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	if len(logs) == 0 {
		if p := getenv(envAuditLog); p != "" {
			logs = append(logs, p)
		} else {
			return fail(exitUsage, "no audit log: pass -audit-log or set %s", envAuditLog)
		}
	}
	q, err := readQuery(stdin)
	if err != nil {
		return fail(exitUsage, "query: %v", err)
	}
	target, err := targetOf(q)
	if err != nil {
		return fail(exitNotFound, "%v", err)
	}
	var best *event
	for _, p := range logs {
		e, err := lastChange(p, target, q.Window)
		if err != nil {
			return fail(exitUsage, "%v", err)
		}
		if e != nil && (best == nil || e.StageTimestamp.After(best.StageTimestamp.Time)) {
			best = e
		}
	}
	if best == nil {
		return fail(exitNotFound, "no %s of %s in the audit log between %s and %s",
			strings.Join(changingVerbs, "/"), target, stamp(q.Window.From), stamp(q.Window.To))
	}
	if err := json.NewEncoder(stdout).Encode(best.answer()); err != nil {
		return fail(exitUsage, "write answer: %v", err)
	}
	return exitFound
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "any time"
	}
	return t.UTC().Format(time.RFC3339)
}

// listFlag is a flag that may be repeated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// query is what driftwatch writes on stdin; fields this adapter does not
// use are ignored.
type query struct {
	Address string            `json:"address"`
	Type    string            `json:"type"`
	IDs     map[string]string `json:"ids"`
	Window  window            `json:"window"`
}

// window is when the change happened: from and to are inclusive, a zero
// bound is open.
type window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

func readQuery(r io.Reader) (query, error) {
	var q query
	b, err := io.ReadAll(io.LimitReader(r, maxQuery+1))
	if err != nil {
		return q, err
	}
	if len(b) > maxQuery {
		return q, fmt.Errorf("longer than %d bytes", maxQuery)
	}
	if err := json.Unmarshal(b, &q); err != nil {
		return q, fmt.Errorf("not JSON: %w", err)
	}
	if q.Type == "" {
		return q, errors.New("no type")
	}
	return q, nil
}

// target is the object a query names, as an audit event's objectRef
// does: a resource (plural, lower case), a namespace ("" for a
// cluster-scoped object) and a name.
type target struct {
	resource, namespace, name string
}

func (t target) String() string {
	if t.namespace == "" {
		return t.resource + " " + t.name
	}
	return t.resource + " " + t.namespace + "/" + t.name
}

// resourceExceptions are kubernetes_* types (without their version)
// whose resource the rule of resourceOf does not give.
var resourceExceptions = map[string]string{
	"endpoints":               "endpoints",
	"default_service_account": "serviceaccounts",
}

// resourceOf maps a kubernetes provider type to the API resource it
// manages: kubernetes_config_map_v1 (and kubernetes_config_map_v1_data)
// is configmaps, kubernetes_network_policy networkpolicies,
// kubernetes_ingress_v1 ingresses.
func resourceOf(typ string) (string, error) {
	kind, ok := strings.CutPrefix(typ, "kubernetes_")
	if !ok || kind == "manifest" || kind == "" {
		return "", fmt.Errorf("type %q: only the kubernetes provider's typed resources (kubernetes_config_map_v1, ...) are known", typ)
	}
	for _, v := range []string{"_v1_data", "_v1", "_v2", "_v2beta2"} {
		if k, ok := strings.CutSuffix(kind, v); ok {
			kind = k
			break
		}
	}
	if r, ok := resourceExceptions[kind]; ok {
		return r, nil
	}
	kind = strings.ReplaceAll(kind, "_", "")
	switch {
	case strings.HasSuffix(kind, "s"):
		return kind + "es", nil
	case strings.HasSuffix(kind, "y"):
		return strings.TrimSuffix(kind, "y") + "ies", nil
	}
	return kind + "s", nil
}

// targetOf finds the object: metadata.namespace and metadata.name from
// the query's ids, else its id ("namespace/name", or "name" for a
// cluster-scoped object).
func targetOf(q query) (target, error) {
	resource, err := resourceOf(q.Type)
	if err != nil {
		return target{}, err
	}
	t := target{resource: resource, namespace: q.IDs["metadata.namespace"], name: q.IDs["metadata.name"]}
	if t.name == "" {
		id := q.IDs["id"]
		if ns, name, ok := strings.Cut(id, "/"); ok {
			t.namespace, t.name = ns, name
		} else {
			t.name = id
		}
	}
	if t.name == "" {
		return target{}, fmt.Errorf("%s: no id or metadata.name among the ids", q.Address)
	}
	return t, nil
}

// event is what this adapter reads of an audit.k8s.io/v1 Event.
type event struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp microTime `json:"stageTimestamp"`
}

// microTime is an audit timestamp (RFC 3339 with microseconds).
type microTime struct{ time.Time }

func (m *microTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	m.Time = t
	return err
}

// changes reports whether e is a completed, successful change of t.
func (e *event) changes(t target) bool {
	if e.Kind != "Event" || !strings.HasPrefix(e.APIVersion, "audit.k8s.io/") || e.Stage != "ResponseComplete" {
		return false
	}
	if !slices.Contains(changingVerbs, e.Verb) || e.ObjectRef == nil || e.ResponseStatus == nil {
		return false
	}
	if e.ResponseStatus.Code < 200 || e.ResponseStatus.Code > 299 {
		return false
	}
	o := e.ObjectRef
	if o.Resource != t.resource || o.Subresource != "" || o.Name != t.name {
		return false
	}
	// A Namespace's own requests carry its name as their namespace.
	return o.Namespace == t.namespace || (t.resource == "namespaces" && o.Namespace == t.name)
}

// within reports whether e completed in w.
func (e *event) within(w window) bool {
	ts := e.StageTimestamp.Time
	return !ts.IsZero() && (w.From.IsZero() || !ts.Before(w.From)) && (w.To.IsZero() || !ts.After(w.To))
}

// answer is the adapter's answer: the acting user (the impersonated one,
// naming who impersonated).
func (e *event) answer() map[string]string {
	actor := e.User.Username
	if e.ImpersonatedUser != nil && e.ImpersonatedUser.Username != "" {
		actor = e.ImpersonatedUser.Username + " (impersonated by " + e.User.Username + ")"
	}
	return map[string]string{
		"actor":    actor,
		"time":     e.StageTimestamp.UTC().Format(time.RFC3339Nano),
		"source":   source,
		"event_id": e.AuditID,
	}
}

// lastChange returns the latest change of t in the window from the log
// at path, nil if there is none. Lines that are not events, or longer
// than maxLine, are skipped.
func lastChange(path string, t target, w window) (*event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	var best *event
	err = eachLine(bufio.NewReaderSize(f, 64<<10), func(line []byte) {
		var e event
		if json.Unmarshal(line, &e) != nil || !e.changes(t) || !e.within(w) {
			return
		}
		if best == nil || !e.StageTimestamp.Before(best.StageTimestamp.Time) {
			best = &e
		}
	})
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return best, nil
}

// eachLine calls fn with every line of r no longer than maxLine.
func eachLine(r *bufio.Reader, fn func([]byte)) error {
	var line []byte
	skipping := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !skipping {
			line = append(line, chunk...)
			if len(line) > maxLine {
				line, skipping = line[:0], true
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil || errors.Is(err, io.EOF):
			if !skipping && len(line) > 0 {
				fn(line)
			}
			line, skipping = line[:0], false
			if err != nil {
				return nil
			}
		default:
			return err
		}
	}
}
