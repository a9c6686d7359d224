package bench

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// genPlanFile writes the saved plan file (`plan -out`) of the plan genPlan
// renders as show -json: the same resources, as Terraform and OpenTofu
// store them. The tfplan member (protobuf) holds a resource change per
// instance (an update back to the configuration for a drifted one, a
// no-op otherwise) and the drift, every value in msgpack; tfstate holds
// the refreshed objects; the configuration snapshot declares the root
// module's and each child module's resources.
func genPlanFile(spec planSpec) []byte {
	rs := genResources(spec)
	var plan []byte
	plan = protowire.AppendTag(plan, 1, protowire.VarintType) // version
	plan = protowire.AppendVarint(plan, 3)
	plan = protowire.AppendTag(plan, 14, protowire.BytesType) // terraform_version
	plan = protowire.AppendString(plan, "1.11.4")
	change := func(addr string, action uint64, values ...[]byte) []byte {
		var c []byte
		if action != 0 {
			c = protowire.AppendTag(c, 1, protowire.VarintType)
			c = protowire.AppendVarint(c, action)
		}
		for _, v := range values {
			var dv []byte
			dv = protowire.AppendTag(dv, 1, protowire.BytesType)
			dv = protowire.AppendBytes(dv, v)
			c = protowire.AppendTag(c, 2, protowire.BytesType)
			c = protowire.AppendBytes(c, dv)
		}
		var ric []byte
		ric = protowire.AppendTag(ric, 13, protowire.BytesType)
		ric = protowire.AppendString(ric, addr)
		ric = protowire.AppendTag(ric, 8, protowire.BytesType)
		ric = protowire.AppendString(ric, `provider["registry.terraform.io/hashicorp/aws"]`)
		ric = protowire.AppendTag(ric, 9, protowire.BytesType)
		return protowire.AppendBytes(ric, c)
	}
	const update, noop = 3, 0
	for _, r := range rs {
		before, after := msgpackOfJSON(r.before), msgpackOfJSON(r.after)
		if r.drift {
			// Drift: the prior run's object, then the refreshed one; the
			// planned change takes the refreshed one back.
			plan = protowire.AppendTag(plan, 18, protowire.BytesType)
			plan = protowire.AppendBytes(plan, change(r.address(), update, before, after))
			plan = protowire.AppendTag(plan, 3, protowire.BytesType)
			plan = protowire.AppendBytes(plan, change(r.address(), update, after, before))
			continue
		}
		plan = protowire.AppendTag(plan, 3, protowire.BytesType)
		plan = protowire.AppendBytes(plan, change(r.address(), noop, before))
	}

	// The refreshed state, one entry per resource with its instances.
	type stateRes struct {
		Module    string           `json:"module,omitempty"`
		Mode      string           `json:"mode"`
		Type      string           `json:"type"`
		Name      string           `json:"name"`
		Provider  string           `json:"provider"`
		Instances []map[string]any `json:"instances"`
	}
	var order []string
	byKey := map[string]*stateRes{}
	for _, r := range rs {
		k := r.module + " " + r.typ + "." + r.name
		sr := byKey[k]
		if sr == nil {
			sr = &stateRes{Module: r.module, Mode: "managed", Type: r.typ, Name: r.name, Provider: `provider["registry.terraform.io/hashicorp/aws"]`}
			byKey[k] = sr
			order = append(order, k)
		}
		inst := map[string]any{"schema_version": 1, "attributes": json.RawMessage(r.after), "sensitive_attributes": []any{}}
		if r.index >= 0 {
			inst["index_key"] = r.index
		}
		sr.Instances = append(sr.Instances, inst)
	}
	var resources []*stateRes
	for _, k := range order {
		resources = append(resources, byKey[k])
	}
	state := mustJSON(map[string]any{"version": 4, "terraform_version": "1.11.4", "serial": 2, "lineage": "bench", "outputs": map[string]any{}, "resources": resources})

	// The configuration: each module's resource blocks.
	config := map[string]*strings.Builder{"": {}}
	declared := map[string]bool{}
	for _, r := range rs {
		key := strings.TrimPrefix(r.module, "module.")
		if config[key] == nil {
			config[key] = &strings.Builder{}
			fmt.Fprintf(config[""], "module %q {\n  source = \"./%s\"\n}\n", key, key)
		}
		if declared[r.module+r.typ+r.name] {
			continue
		}
		declared[r.module+r.typ+r.name] = true
		count := ""
		if r.index >= 0 {
			count = "  count = 3\n"
		}
		fmt.Fprintf(config[key], "resource %q %q {\n%s}\n", r.typ, r.name, count)
	}
	var manifest []map[string]string
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		manifest = append(manifest, map[string]string{"Key": k, "Source": "./" + k, "Dir": k})
	}

	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	put := func(name string, b []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err == nil {
			_, err = w.Write(b)
		}
		if err != nil {
			panic(err)
		}
	}
	put("tfplan", plan)
	put("tfstate", state)
	put("tfstate-prev", state)
	put("tfconfig/modules.json", mustJSON(manifest))
	for _, k := range keys {
		put("tfconfig/m-"+k+"/main.tf", []byte(config[k].String()))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// msgpackOfJSON encodes a JSON document as cty's msgpack encoding would
// encode the same value: maps with sorted keys, whole numbers as integers.
func msgpackOfJSON(doc []byte) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		panic(err)
	}
	return appendMsgpack(nil, v)
}

func appendMsgpack(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, 0xc0)
	case bool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<62 {
			return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(int64(v)))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(v))
	case string:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(len(v)))
		return append(b, v...)
	case []any:
		b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(len(v)))
		for _, e := range v {
			b = appendMsgpack(b, e)
		}
		return b
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(len(v)))
		for _, k := range keys {
			b = appendMsgpack(b, k)
			b = appendMsgpack(b, v[k])
		}
		return b
	}
	panic(fmt.Sprintf("msgpack: %T", v))
}
