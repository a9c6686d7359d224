package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// planSpec sizes a synthetic plan.
type planSpec struct {
	Resources int     // managed resources
	Attrs     int     // attributes per resource (about)
	Drifted   float64 // fraction drifted outside Terraform
	Modules   int     // resources are spread over this many child modules (plus root)
	Seed      uint64
}

// bigPlan is the large-plan workload, which must classify in well under a
// second: ~50 MB, 4,700 resources with ~40 attributes, 10% drifted.
var bigPlan = planSpec{Resources: 4700, Attrs: 40, Drifted: 0.10, Modules: 12, Seed: 1}

var resourceTypes = []string{
	"aws_instance", "aws_s3_bucket", "aws_iam_role", "aws_iam_policy", "aws_security_group",
	"aws_lb_target_group", "aws_route53_record", "aws_db_instance", "aws_lambda_function",
	"aws_cloudwatch_log_group", "aws_sqs_queue", "aws_sns_topic", "aws_ecs_service",
	"aws_ecs_task_definition", "aws_subnet", "aws_eip", "google_compute_instance",
	"azurerm_linux_virtual_machine", "kubernetes_namespace", "helm_release",
}

type genResource struct {
	module string // "" or "module.NAME"
	typ    string
	name   string
	index  int // -1: no count
	before []byte
	after  []byte // differs from before when drifted
	drift  bool
	attrs  map[string]any
}

func (r *genResource) address() string {
	a := r.typ + "." + r.name
	if r.index >= 0 {
		a += fmt.Sprintf("[%d]", r.index)
	}
	if r.module != "" {
		a = r.module + "." + a
	}
	return a
}

// genAttrs builds a realistic attribute object: ids and ARNs, tags maps,
// numbers, booleans, nulls, lists, nested blocks and a JSON policy string.
func genAttrs(rng *rand.Rand, n int, addr string) map[string]any {
	word := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyz"
		b := make([]byte, 3+rng.IntN(9))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	tags := map[string]any{"Name": addr, "env": "prod", "team": word(), "cost-center": fmt.Sprint(rng.IntN(9999)), "managed-by": "terraform"}
	m := map[string]any{
		"id":       fmt.Sprintf("i-%016x", rng.Uint64()),
		"arn":      fmt.Sprintf("arn:aws:service:eu-west-1:123456789012:%s/%s", word(), word()),
		"name":     addr,
		"tags":     tags,
		"tags_all": tags,
		"timeouts": nil,
		"policy": fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":["arn:aws:s3:::%s/*"],"Condition":{"StringEquals":{"aws:PrincipalTag/team":"%s"}}}]}`,
			word(), word()),
		"ingress": []any{
			map[string]any{"from_port": 443, "to_port": 443, "protocol": "tcp", "cidr_blocks": []any{"10.0.0.0/8"}, "description": word()},
			map[string]any{"from_port": 80, "to_port": 80, "protocol": "tcp", "cidr_blocks": []any{"10.0.0.0/8", "192.168.0.0/16"}, "description": word()},
		},
	}
	for i := len(m); i < n; i++ {
		k := fmt.Sprintf("%s_%d", word(), i)
		switch i % 6 {
		case 0:
			m[k] = word() + "-" + word()
		case 1:
			m[k] = rng.IntN(100000)
		case 2:
			m[k] = rng.IntN(2) == 0
		case 3:
			m[k] = nil
		case 4:
			m[k] = []any{word(), word(), word()}
		case 5:
			m[k] = fmt.Sprintf("%s.%s.internal", word(), word())
		}
	}
	return m
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// genResources makes spec's resources, the same for every seed.
func genResources(spec planSpec) []*genResource {
	rng := rand.New(rand.NewPCG(spec.Seed, spec.Seed*7+1))
	var rs []*genResource
	for i := range spec.Resources {
		r := &genResource{typ: resourceTypes[i%len(resourceTypes)], name: fmt.Sprintf("r%d", i/len(resourceTypes)), index: -1}
		if m := i % (spec.Modules + 1); m > 0 {
			r.module = fmt.Sprintf("module.svc%d", m)
		}
		if i%7 == 0 {
			r.index = i % 3
			r.name += "_n"
		}
		r.attrs = genAttrs(rng, spec.Attrs, r.address())
		r.before = mustJSON(r.attrs)
		r.after = r.before
		if rng.Float64() < spec.Drifted {
			r.drift = true
			changed := make(map[string]any, len(r.attrs))
			for k, v := range r.attrs {
				changed[k] = v
			}
			changed["tags"] = map[string]any{"Name": r.address(), "env": "prod", "hotfix": "true"}
			changed["name"] = r.address() + "-edited"
			r.after = mustJSON(changed)
		}
		rs = append(rs, r)
	}
	return rs
}

// genPlan writes a plan JSON document shaped like `terraform show -json`
// output of a normal (not refresh-only) plan: variables, planned_values,
// resource_drift, resource_changes, output_changes, prior_state,
// configuration, relevant_attributes, checks and the top-level flags.
func genPlan(spec planSpec) []byte {
	rs := genResources(spec)
	var b bytes.Buffer
	b.Grow(56 << 20)
	w := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
	}
	comma := func(i int) {
		if i > 0 {
			b.WriteByte(',')
		}
	}
	resHeader := func(r *genResource) {
		w(`"address":`, string(mustJSON(r.address())), `,"mode":"managed","type":"`, r.typ, `","name":"`, r.name, `"`)
		if r.index >= 0 {
			fmt.Fprintf(&b, `,"index":%d`, r.index)
		}
		w(`,"provider_name":"registry.terraform.io/hashicorp/aws"`)
	}
	// A state module tree (planned_values, prior_state): values use after
	// (planned) or before (prior).
	modules := func() []string {
		var ms []string
		for _, r := range rs {
			if r.module != "" && !slices.Contains(ms, r.module) {
				ms = append(ms, r.module)
			}
		}
		slices.Sort(ms)
		return ms
	}()
	stateModule := func(prior bool) {
		writeRes := func(mod string) {
			b.WriteString(`"resources":[`)
			n := 0
			for _, r := range rs {
				if r.module != mod {
					continue
				}
				comma(n)
				n++
				b.WriteByte('{')
				resHeader(r)
				v := r.before
				if prior {
					v = r.after // prior state holds the refreshed (drifted) object
				}
				w(`,"schema_version":1,"values":`, string(v), `,"sensitive_values":{"tags":{},"tags_all":{},"ingress":[{"cidr_blocks":[false]},{"cidr_blocks":[false,false]}]}}`)
			}
			b.WriteByte(']')
		}
		b.WriteString(`"root_module":{`)
		writeRes("")
		b.WriteString(`,"child_modules":[`)
		for i, m := range modules {
			comma(i)
			w(`{`)
			writeRes(m)
			w(`,"address":"`, m, `"}`)
		}
		b.WriteString(`]}`)
	}
	change := func(actions string, before, after []byte) {
		w(`"change":{"actions":`, actions, `,"before":`, string(before), `,"after":`, string(after),
			`,"after_unknown":{},"before_sensitive":{"tags":{},"tags_all":{}},"after_sensitive":{"tags":{},"tags_all":{}}}`)
	}

	w(`{"format_version":"1.2","terraform_version":"1.11.4","variables":{"env":{"value":"prod"},"region":{"value":"eu-west-1"}},"planned_values":{"outputs":{"vpc_id":{"sensitive":false,"type":"string","value":"vpc-123"}},`)
	stateModule(false)
	w(`},"resource_drift":[`)
	n := 0
	for _, r := range rs {
		if !r.drift {
			continue
		}
		comma(n)
		n++
		b.WriteByte('{')
		resHeader(r)
		b.WriteByte(',')
		change(`["update"]`, r.before, r.after)
		b.WriteByte('}')
	}
	w(`],"resource_changes":[`)
	for i, r := range rs {
		comma(i)
		b.WriteByte('{')
		resHeader(r)
		b.WriteByte(',')
		if r.drift {
			change(`["update"]`, r.after, r.before) // revert the drift
		} else {
			change(`["no-op"]`, r.before, r.before)
		}
		b.WriteByte('}')
	}
	w(`],"output_changes":{"vpc_id":{"actions":["no-op"],"before":"vpc-123","after":"vpc-123","after_unknown":false,"before_sensitive":false,"after_sensitive":false}},`)
	w(`"prior_state":{"format_version":"1.0","terraform_version":"1.11.4","values":{"outputs":{"vpc_id":{"sensitive":false,"value":"vpc-123","type":"string"}},`)
	stateModule(true)
	w(`}},"configuration":{"provider_config":{"aws":{"name":"aws","full_name":"registry.terraform.io/hashicorp/aws","expressions":{"region":{"references":["var.region"]}}}},`)
	configModule := func(mod string) {
		b.WriteString(`"resources":[`)
		n := 0
		seen := map[string]bool{}
		for _, r := range rs {
			if r.module != mod || seen[r.typ+"."+r.name] {
				continue
			}
			seen[r.typ+"."+r.name] = true
			comma(n)
			n++
			w(`{"address":"`, r.typ, ".", r.name, `","mode":"managed","type":"`, r.typ, `","name":"`, r.name,
				`","provider_config_key":"aws","expressions":{`)
			keys := make([]string, 0, len(r.attrs))
			for k := range r.attrs {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for i, k := range keys {
				comma(i)
				if i%5 == 0 {
					w(`"`, k, `":{"references":["var.env","local.`, k, `"]}`)
				} else {
					w(`"`, k, `":{"constant_value":`, string(mustJSON(r.attrs[k])), `}`)
				}
			}
			b.WriteString(`},"schema_version":1`)
			if r.index >= 0 {
				b.WriteString(`,"count_expression":{"constant_value":3}`)
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	w(`"root_module":{"outputs":{"vpc_id":{"expression":{"references":["aws_vpc.main.id"]}}},`)
	configModule("")
	w(`,"module_calls":{`)
	for i, m := range modules {
		comma(i)
		w(`"`, strings.TrimPrefix(m, "module."), `":{"source":"./modules/svc","module":{`)
		configModule(m)
		w(`},"expressions":{"env":{"references":["var.env"]}}}`)
	}
	w(`},"variables":{"env":{"default":"prod"},"region":{}}}},"relevant_attributes":[`)
	n = 0
	for _, r := range rs {
		if r.drift && n < 50 {
			comma(n)
			n++
			w(`{"resource":`, string(mustJSON(r.address())), `,"attribute":["tags","Name"]}`)
		}
	}
	w(`],"checks":[],"timestamp":"2026-11-22T00:00:00Z","applyable":true,"complete":true,"errored":false}`)
	return b.Bytes()
}
