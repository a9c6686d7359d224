package planfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// canary stands for a secret value inside a plan: no error may quote it.
const canary = "canary-secret-91x"

// Test-only msgpack encoder: just enough to build cty values by hand.

func mpStr(s string) []byte {
	switch n := len(s); {
	case n < 32:
		return append([]byte{0xa0 | byte(n)}, s...)
	case n < 1<<8:
		return append([]byte{0xd9, byte(n)}, s...)
	default:
		return append(binary.BigEndian.AppendUint16([]byte{0xda}, uint16(n)), s...)
	}
}

func mpArr(elems ...[]byte) []byte {
	var b []byte
	if n := len(elems); n < 16 {
		b = []byte{0x90 | byte(n)}
	} else {
		b = binary.BigEndian.AppendUint16([]byte{0xdc}, uint16(n))
	}
	return concat(append([][]byte{b}, elems...)...)
}

// mpMap takes alternating keys and values, keys as Go strings.
func mpMap(kv ...any) []byte {
	var b []byte
	if n := len(kv) / 2; n < 16 {
		b = []byte{0x80 | byte(n)}
	} else {
		b = binary.BigEndian.AppendUint16([]byte{0xde}, uint16(n))
	}
	for i := 0; i < len(kv); i += 2 {
		b = append(b, mpStr(kv[i].(string))...)
		b = append(b, kv[i+1].([]byte)...)
	}
	return b
}

// mpDyn is a value of dynamic type: [type as JSON in a bin8, value].
func mpDyn(typ string, v []byte) []byte {
	return concat([]byte{0x92, 0xc4, byte(len(typ))}, []byte(typ), v)
}

var (
	mpNil     = []byte{0xc0}
	mpTrue    = []byte{0xc3}
	mpUnknown = []byte{0xd4, 0x00, 0x00} // fixext1, type 0
	mpOne     = []byte{0x01}
)

// nested returns depth arrays of one element around nil.
func nested(depth int) []byte {
	return append(bytes.Repeat([]byte{0x91}, depth), 0xc0)
}

type msgpackCase struct {
	name    string
	in      []byte
	json    string // appendJSON
	unknown string // appendUnknown
}

var msgpackCases = []msgpackCase{
	{"nil", mpNil, `null`, `false`},
	{"false", []byte{0xc2}, `false`, `false`},
	{"true", mpTrue, `true`, `false`},
	{"positive fixint", []byte{0x7f}, `127`, `false`},
	{"zero", []byte{0x00}, `0`, `false`},
	{"negative fixint", []byte{0xe0}, `-32`, `false`},
	{"negative fixint -1", []byte{0xff}, `-1`, `false`},
	{"int8", []byte{0xd0, 0x80}, `-128`, `false`},
	{"int16", []byte{0xd1, 0xff, 0x7f}, `-129`, `false`},
	{"int32", []byte{0xd2, 0x80, 0, 0, 0}, `-2147483648`, `false`},
	{"int64 min", []byte{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, `-9223372036854775808`, `false`},
	{"int64 positive", []byte{0xd3, 0, 0, 0, 0, 0, 0, 0x01, 0x00}, `256`, `false`},
	{"uint8", []byte{0xcc, 0xff}, `255`, `false`},
	{"uint16", []byte{0xcd, 0x01, 0x00}, `256`, `false`},
	{"uint32", []byte{0xce, 0xff, 0xff, 0xff, 0xff}, `4294967295`, `false`},
	{"uint64 max", []byte{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, `18446744073709551615`, `false`},
	{"float32", []byte{0xca, 0x3f, 0xc0, 0, 0}, `1.5`, `false`},
	{"float64", []byte{0xcb, 0xbf, 0xd0, 0, 0, 0, 0, 0, 0}, `-0.25`, `false`},
	{"fixstr", mpStr("hi"), `"hi"`, `false`},
	{"fixstr escaped as show -json does", mpStr("q\"<\n"), `"q\"\u003c\n"`, `false`},
	{"empty str", mpStr(""), `""`, `false`},
	{"str8", mpStr(strings.Repeat("x", 40)), `"` + strings.Repeat("x", 40) + `"`, `false`},
	{"str16", mpStr(strings.Repeat("y", 300)), `"` + strings.Repeat("y", 300) + `"`, `false`},
	{"fixarray", mpArr(mpOne, mpNil, mpTrue), `[1,null,true]`, `[false,false,false]`},
	{"empty array", mpArr(), `[]`, `[]`},
	{"array16", concat([]byte{0xdc, 0x00, 0x02}, mpOne, mpStr("a")), `[1,"a"]`, `[false,false]`},
	{"fixmap", mpMap("a", mpOne, "b", mpStr("x")), `{"a":1,"b":"x"}`, `{}`},
	{"map16", concat([]byte{0xde, 0x00, 0x01}, mpStr("k"), mpNil), `{"k":null}`, `{}`},
	{"map key escaped", mpMap("a.b\"", mpOne), `{"a.b\"":1}`, `{}`},
	{"unknown fixext1", mpUnknown, `null`, `true`},
	{"unknown ext8", []byte{0xc7, 0x03, 0x00, 1, 2, 3}, `null`, `true`},
	{"refined unknown ext8", []byte{0xc7, 0x01, 0x0c, 0x80}, `null`, `true`},
	{"refined unknown fixext1", []byte{0xd4, 0x0c, 0x80}, `null`, `true`},
	// show -json leaves an unknown attribute out of after and marks it in
	// after_unknown; known leaves are left out of the marker.
	{"unknown in an object", mpMap("a", mpUnknown, "b", mpUnknown, "c", mpOne), `{"c":1}`, `{"a":true,"b":true}`},
	{"unknown last in an object", mpMap("a", mpOne, "z", mpUnknown), `{"a":1}`, `{"z":true}`},
	{"unknown in an array", mpArr(mpUnknown, mpOne), `[null,1]`, `[true,false]`},
	{
		"nested collections keep their shape in the marker",
		mpMap("l", mpArr(mpOne), "m", mpMap("x", mpUnknown, "y", mpOne), "n", mpNil, "s", mpStr("v")),
		`{"l":[1],"m":{"y":1},"n":null,"s":"v"}`,
		`{"l":[false],"m":{"x":true}}`,
	},
	{"dynamic value", mpDyn(`"string"`, mpStr("x")), `"x"`, `false`},
	{"dynamic list in an object", mpMap("d", mpDyn(`["list","number"]`, mpArr(mpOne, []byte{0x02}))), `{"d":[1,2]}`, `{"d":[false,false]}`},
	{"dynamic unknown", mpDyn(`"string"`, mpUnknown), `null`, `true`},
	{"nesting at the limit", nested(maxDepth), strings.Repeat("[", maxDepth) + "null" + strings.Repeat("]", maxDepth), strings.Repeat("[", maxDepth) + "false" + strings.Repeat("]", maxDepth)},
}

func TestDecodeMsgpack(t *testing.T) {
	for _, tc := range msgpackCases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			v, err := decodeMsgpack(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.json, string(v.appendJSON(nil)))
			require.Equal(t, tc.unknown, string(v.appendUnknown(nil)))
			// known() is what decides whether after_unknown is computed.
			require.Equal(t, !strings.Contains(tc.unknown, "true"), v.known())
		})
	}
}

type msgpackErrorCase struct {
	name, want string
	in         []byte
}

var msgpackErrorCases = []msgpackErrorCase{
	{"empty input", "truncated", nil},
	{"array cut after a secret", "truncated", concat([]byte{0x93}, mpStr(canary))},
	{"map cut after a secret", "truncated", concat([]byte{0x82}, mpStr("k"), mpStr(canary), mpStr("k2"))},
	{"str8 longer than the input", "truncated", concat([]byte{0xd9, 0x40}, []byte(canary))},
	{"uint16 cut", "truncated", []byte{0xcd, 0x01}},
	{"float64 cut", "truncated", []byte{0xcb, 0x3f}},
	{"ext8 payload cut", "truncated", []byte{0xc7, 0x05, 0x00, 1}},
	{"huge array count", "truncated", []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}},
	{"huge map count", "truncated", []byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0}},
	{"dynamic type cut", "truncated", []byte{0x92, 0xc4, 0x10, '"'}},
	{"trailing bytes", "trailing bytes", concat(mpStr(canary), mpNil)},
	{"bare bin", "unexpected bin", concat([]byte{0xc4, byte(len(canary))}, []byte(canary))},
	{"bin as a map value", "unexpected bin", mpMap("k", concat([]byte{0xc4, byte(len(canary))}, []byte(canary)))},
	{"bin second in a pair", "unexpected bin", mpArr(mpOne, []byte{0xc4, 0x01, 'x'})},
	{"unknown ext type", "extension type 5", concat([]byte{0xc7, byte(len(canary)), 0x05}, []byte(canary))},
	{"timestamp ext type", "extension type -1", []byte{0xd6, 0xff, 0, 0, 0, 0}},
	{"int map key", "not a string", concat([]byte{0x82}, mpStr("a"), mpStr(canary), mpOne, mpNil)},
	{"nil map key", "not a string", concat([]byte{0x81}, mpNil, mpStr(canary))},
	{"nested too deep", "nested too deep", concat([]byte{0x92}, mpStr(canary), nested(maxDepth))},
	{"NaN float64", "not a finite number", concat([]byte{0x92}, mpStr(canary), []byte{0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1})},
	{"infinite float32", "not a finite number", []byte{0xca, 0x7f, 0x80, 0, 0}},
	{"reserved type byte", "unknown type byte", concat([]byte{0x92}, mpStr(canary), []byte{0xc1})},
}

func TestDecodeMsgpackErrors(t *testing.T) {
	for _, tc := range msgpackErrorCases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			_, err := decodeMsgpack(tc.in)
			require.ErrorIs(t, err, errMsgpack)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), canary)
		})
	}
}

// Paths as tfplan records them: attribute steps and element keys, the
// keys in msgpack.

func attrStep(name string) rawStep { return rawStep{attr: name} }

func keyStep(mp []byte) rawStep { return rawStep{key: mp, isKey: true} }

func strKey(s string) rawStep { return keyStep(mpStr(s)) }

func TestSensitiveMarker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []rawPath
		want  string
	}{
		{"no sensitive path", nil, `{}`},
		{"attribute", []rawPath{{attrStep("password")}}, `{"password":true}`},
		{
			"nested attributes and siblings, keys sorted",
			[]rawPath{{attrStep("z")}, {attrStep("a"), attrStep("b")}, {attrStep("a"), attrStep("c")}},
			`{"a":{"b":true,"c":true},"z":true}`,
		},
		{"string element key", []rawPath{{attrStep("tags"), strKey("secret.k")}}, `{"tags":{"secret.k":true}}`},
		{"attribute name escaped", []rawPath{{attrStep(`we"ird`)}}, `{"we\"ird":true}`},
		// show -json marks a list element in an array as long as needed.
		{"int element key", []rawPath{{attrStep("list"), keyStep([]byte{0x02})}}, `{"list":[false,false,true]}`},
		{"uint8 element key", []rawPath{{attrStep("list"), keyStep([]byte{0xcc, 0x01})}}, `{"list":[false,true]}`},
		{
			"attribute inside a list element",
			[]rawPath{{attrStep("l"), keyStep([]byte{0x01}), attrStep("p")}, {attrStep("l"), keyStep([]byte{0x00})}},
			`{"l":[true,{"p":true}]}`,
		},
		{"whole value", []rawPath{{}}, `true`},
		{"whole value after others", []rawPath{{attrStep("a")}, {}}, `true`},
		{"under a sensitive parent", []rawPath{{attrStep("a")}, {attrStep("a"), attrStep("b")}}, `{"a":true}`},
		{"parent after its child", []rawPath{{attrStep("a"), attrStep("b")}, {attrStep("a")}}, `{"a":true}`},
		// Below a sensitive parent a set element needs no position.
		{"set element under a sensitive parent", []rawPath{{attrStep("s")}, {attrStep("s"), keyStep(mpMap("x", mpOne))}}, `{"s":true}`},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			got, err := sensitiveMarker(tc.paths)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			require.True(t, json.Valid(got))
		})
	}

	long, err := sensitiveMarker([]rawPath{{attrStep("l"), keyStep([]byte{0xcd, 0x01, 0x00})}})
	require.NoError(t, err)
	require.True(t, bytes.HasSuffix(long, []byte(",true]}")))
	require.Len(t, long, len(`{"l":[`)+(1<<8)*len("false,")+len("true]}"))
}

func TestSensitiveMarkerRefused(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		path       rawPath
	}{
		{"set element (object key)", "inside a set", rawPath{attrStep("s"), keyStep(mpMap("v", mpStr(canary)))}},
		{"set element (string set)", "inside a set", rawPath{attrStep("s"), keyStep(mpArr(mpStr(canary)))}},
		{"negative index", "inside a set", rawPath{attrStep("l"), keyStep([]byte{0xff})}},
		{"malformed key", "inside a set", rawPath{attrStep("l"), keyStep(concat([]byte{0xd9, 0x40}, []byte(canary)))}},
		{"index beyond the limit", "out of range", rawPath{attrStep("l"), keyStep([]byte{0xce, 0x00, 0x01, 0x00, 0x01})}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			_, err := sensitiveMarker([]rawPath{{attrStep("ok")}, tc.path})
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), canary)
		})
	}
	// The largest index allowed still renders.
	_, err := sensitiveMarker([]rawPath{{attrStep("l"), keyStep([]byte{0xce, 0x00, 0x01, 0x00, 0x00})}})
	require.NoError(t, err)
}

func TestPathString(t *testing.T) {
	for _, tc := range []struct {
		name string
		path rawPath
		want string
	}{
		{"empty", nil, ""},
		{"attributes", rawPath{attrStep("a"), attrStep("b")}, "a.b"},
		{"identifier map key", rawPath{attrStep("tags"), strKey("env")}, "tags.env"},
		{"map key needing quotes", rawPath{attrStep("a"), strKey("b.c")}, `a["b.c"]`},
		{"index", rawPath{attrStep("l"), keyStep([]byte{0x03}), attrStep("x")}, "l[3].x"},
		// A set element is addressed by its value, which the path spelling
		// leaves out.
		{"set element dropped", rawPath{attrStep("s"), keyStep(mpMap("v", mpStr(canary))), attrStep("y")}, "s.y"},
		{"bool key dropped", rawPath{attrStep("s"), keyStep(mpTrue)}, "s"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			require.Equal(t, tc.want, pathString(tc.path))
		})
	}
}

func TestParseInstAddr(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want instAddr
	}{
		{"aws_s3_bucket.b", instAddr{mode: modeManaged, typ: "aws_s3_bucket", name: "b"}},
		{"data.aws_ami.x[0]", instAddr{mode: modeData, typ: "aws_ami", name: "x", key: key{kind: 'I'}}},
		{`t.n["a.b"]`, instAddr{mode: modeManaged, typ: "t", name: "n", key: key{kind: 'S', s: "a.b"}}},
		{`t.n["with [brackets]"]`, instAddr{mode: modeManaged, typ: "t", name: "n", key: key{kind: 'S', s: "with [brackets]"}}},
		{`t.n["q\"]."]`, instAddr{mode: modeManaged, typ: "t", name: "n", key: key{kind: 'S', s: `q"].`}}},
		{
			`module.a["k.x"].module.b[3].data.t.n["z"]`,
			instAddr{
				modules: []step{{name: "a", key: key{kind: 'S', s: "k.x"}}, {name: "b", key: key{kind: 'I', n: 3}}},
				mode:    modeData, typ: "t", name: "n", key: key{kind: 'S', s: "z"},
			},
		},
		{"module.m.t.n", instAddr{modules: []step{{name: "m"}}, mode: modeManaged, typ: "t", name: "n"}},
		// Terraform quotes keys as HCL does: template sequences doubled.
		{`t.n["a$${x}%%{y}"]`, instAddr{mode: modeManaged, typ: "t", name: "n", key: key{kind: 'S', s: "a${x}%{y}"}}},
	} {
		got, err := parseInstAddr(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}

	for _, in := range []string{
		"", "t", "t.", ".n", "data.t", "module.m", "module.m.t", "module..t.n", "module.m[0]t.n",
		"t.n.extra", "t n.x", `t.n[`, `t.n[1`, `t.n["x`, `t.n["x"`, `t.n[x]`, `t.n[]`,
		`t.n[1]x`, `t.n["x"]y`, `t.n[1]["x"]`, `module.m["unterminated].t.n`,
	} {
		_, err := parseInstAddr(in)
		require.ErrorIs(t, err, errAddr, "%q", in)
	}
}

func TestInstAddrCompare(t *testing.T) {
	// In show -json's order: shorter module path, module name and key,
	// data before managed, type, name, then no key, ints numerically,
	// strings.
	ordered := []string{
		"data.t.a",
		"t.a",
		"t.a[2]",
		"t.a[10]",
		`t.a["10"]`,
		`t.a["2"]`,
		`t.a["b"]`,
		"t.b",
		"u.a",
		"module.m.data.z.z",
		"module.m.t.a",
		"module.m[2].t.a",
		"module.m[10].t.a",
		`module.m["x"].t.a`,
		"module.n.t.a",
		"module.a.module.b.t.a",
	}
	addrs := make([]instAddr, len(ordered))
	for i, s := range ordered {
		a, err := parseInstAddr(s)
		require.NoError(t, err, s)
		addrs[i] = a
	}
	for i := range addrs {
		for j := range addrs {
			c := addrs[i].compare(addrs[j])
			switch {
			case i < j:
				require.Negative(t, c, "%s before %s", ordered[i], ordered[j])
			case i > j:
				require.Positive(t, c, "%s after %s", ordered[i], ordered[j])
			default:
				require.Zero(t, c, ordered[i])
			}
		}
	}
}

// Test-only protobuf encoder for the tfplan member.

func pbBytes(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

func pbVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func pbDynamic(mp []byte) []byte { return pbBytes(dynamicMsgpack, mp) }

func pbPath(p rawPath) []byte {
	var b []byte
	for _, s := range p {
		var st []byte
		if s.isKey {
			st = pbBytes(stepElementKey, pbDynamic(s.key))
		} else {
			st = pbBytes(stepAttribute, []byte(s.attr))
		}
		b = append(b, pbBytes(pathSteps, st)...)
	}
	return b
}

// ric is a ResourceInstanceChange to encode.
type ric struct {
	addr, deposed string
	action        uint64
	reason        uint64
	values        [][]byte // msgpack
	beforeSens    []rawPath
	afterSens     []rawPath
	importing     bool
	// importingMsg is the Importing message (importing must be set);
	// changeExtra is appended to the Change message.
	importingMsg, changeExtra []byte
}

func (c ric) encode() []byte {
	ch := pbVarint(changeAction, c.action)
	for _, v := range c.values {
		ch = append(ch, pbBytes(changeValues, pbDynamic(v))...)
	}
	for _, p := range c.beforeSens {
		ch = append(ch, pbBytes(changeBeforeSens, pbPath(p))...)
	}
	for _, p := range c.afterSens {
		ch = append(ch, pbBytes(changeAfterSens, pbPath(p))...)
	}
	if c.importing {
		ch = append(ch, pbBytes(changeImporting, c.importingMsg)...)
	}
	ch = append(ch, c.changeExtra...)
	b := pbBytes(ricAddr, []byte(c.addr))
	if c.deposed != "" {
		b = append(b, pbBytes(ricDeposed, []byte(c.deposed))...)
	}
	if c.reason != 0 {
		b = append(b, pbVarint(ricReason, c.reason)...)
	}
	return append(b, pbBytes(ricChange, ch)...)
}

func pbChange(c ric) []byte { return pbBytes(planResourceChanges, c.encode()) }

func pbDrift(c ric) []byte { return pbBytes(planResourceDrift, c.encode()) }

func pbOutput(name string, action uint64) []byte {
	return pbBytes(planOutputChanges, concat(pbBytes(outputName, []byte(name)), pbBytes(outputChange, pbVarint(changeAction, action))))
}

func pbRelevant(resource string, p rawPath) []byte {
	return pbBytes(planRelevantAttrs, concat(pbBytes(relevantResource, []byte(resource)), pbBytes(relevantAttr, pbPath(p))))
}

// pbCheck is a check result; status 0 leaves the field out (UNKNOWN).
func pbCheck(status uint64) []byte {
	b := pbBytes(1, []byte("check.c")) // a field this package skips
	if status != 0 {
		b = append(b, pbVarint(checkStatus, status)...)
	}
	return pbBytes(planCheckResults, b)
}

// tfplan is a version 3 plan with parts appended.
func tfplan(parts ...[]byte) []byte {
	return concat(append([][]byte{pbVarint(planVersion, tfplanVersion), pbBytes(planTFVersion, []byte("1.11.4"))}, parts...)...)
}

// decodeTFPlan runs Decode on the synthetic plan file with tfplan as its
// plan member.
func decodeTFPlan(t *testing.T, plan []byte) (*planparse.Plan, error) {
	t.Helper()
	m := synthetic()
	m[memberPlan] = plan
	return Decode(writeZip(t, m))
}

func obj(kv ...any) []byte { return mpMap(kv...) }

func TestDecode(t *testing.T) {
	secret := mpStr(canary)
	plan := tfplan(
		// Out of order: Decode orders changes by address.
		pbChange(ric{addr: "t_x.new", action: actionCreate, values: [][]byte{obj("id", mpUnknown)}}),
		pbChange(ric{
			addr: "t_x.b", action: actionUpdate,
			values: [][]byte{obj("arn", mpStr("x"), "id", mpOne), obj("arn", mpUnknown, "id", mpOne)},
		}),
		pbChange(ric{
			addr: "t_x.a", action: actionUpdate,
			values:     [][]byte{obj("id", mpOne, "name", mpStr("old"), "secret", secret), obj("id", mpOne, "name", mpStr("new"), "secret", secret)},
			beforeSens: []rawPath{{attrStep("secret")}},
			afterSens:  []rawPath{{attrStep("secret")}},
		}),
		pbChange(ric{addr: "t_x.a", deposed: "abcd1234", action: actionDelete, values: [][]byte{obj("id", mpOne)}}),
		pbChange(ric{addr: "t_x.c", action: actionNoop, values: [][]byte{obj("id", mpOne)}}),
		pbChange(ric{addr: "t_x.r", action: actionDeleteThenCreate, reason: 2, values: [][]byte{obj("id", mpOne), obj("id", []byte{0x02})}}),
		// A data resource's state clean-up: show -json hides it.
		pbChange(ric{addr: "data.t_d.gone", action: actionDelete, values: [][]byte{obj("id", mpOne)}}),
		pbDrift(ric{
			addr: "t_x.a", action: actionUpdate,
			values:    [][]byte{obj("id", secret, "name", mpStr("x"), "size", mpOne), obj("id", secret, "name", mpStr("x"), "size", []byte{0x02})},
			afterSens: []rawPath{{attrStep("id")}},
		}),
		// Deleted outside Terraform: its ids from before, not the sensitive one.
		pbDrift(ric{addr: "t_x.gone", action: actionDelete, values: [][]byte{obj("id", mpStr("g-1"), "name", secret)},
			beforeSens: []rawPath{{attrStep("name")}}}),
		// A move without other change is not drift outside refresh-only.
		pbDrift(ric{addr: "t_x.c", action: actionNoop, values: [][]byte{obj("id", mpOne)}}),
		pbDrift(ric{addr: "data.t_d.gone", action: actionDelete, values: [][]byte{obj("id", mpOne)}}),
		pbOutput("z", actionUpdate),
		pbOutput("b", actionCreate),
		pbOutput("same", actionNoop),
		pbRelevant("t_x.a", rawPath{attrStep("name")}),
		pbRelevant("t_x.a", rawPath{attrStep("tags"), strKey("b.c")}),
		pbRelevant("t_x.a", rawPath{attrStep("name")}),
		pbRelevant("t_x.b", nil),
		pbCheck(checkPass),
		pbVarint(planUIMode, 0),
		// Fields this package does not read are skipped.
		pbVarint(99, 7), pbBytes(98, []byte(canary)),
	)
	got, err := decodeTFPlan(t, plan)
	require.NoError(t, err)

	require.Equal(t, "1.11.4", got.TerraformVersion)
	require.False(t, got.Errored)
	managed := func(addr string, actions ...string) planparse.Change {
		return planparse.Change{Address: addr, Mode: modeManaged, Type: "t_x", Actions: actions}
	}
	wantChanges := []planparse.Change{
		managed("t_x.a", "update"),
		managed("t_x.a", "delete"),
		managed("t_x.b", "update"),
		managed("t_x.new", "create"),
		managed("t_x.r", "delete", "create"),
	}
	wantChanges[0].Attributes = []string{"name"}
	wantChanges[1].Deposed = "abcd1234"
	wantChanges[2].Attributes = []string{"arn"}
	wantChanges[2].Unknown = []string{"arn"}
	wantChanges[4].Attributes = []string{"id"}
	wantChanges[4].ActionReason = "replace_by_request"
	if diff := cmp.Diff(wantChanges, got.Changes); diff != "" {
		t.Errorf("Changes (-want +got):\n%s", diff)
	}
	wantDrift := []planparse.Change{managed("t_x.a", "update"), managed("t_x.gone", "delete")}
	wantDrift[0].Attributes = []string{"size"}
	wantDrift[0].IDs = map[string]string{"name": "x"}
	wantDrift[0].Shape = "size: number → number"
	wantDrift[1].IDs = map[string]string{"id": "g-1"}
	if diff := cmp.Diff(wantDrift, got.Drift); diff != "" {
		t.Errorf("Drift (-want +got):\n%s", diff)
	}
	require.Equal(t, []string{"t_x.c"}, got.NoOp)
	require.Equal(t, []string{"b", "z"}, got.OutputChanges)
	require.Equal(t, map[string][]string{"t_x.a": {"name", `tags["b.c"]`}, "t_x.b": {}}, got.RelevantAttributes)
	require.Empty(t, got.Checks)

	// Planned instances join the resources; a deleted data resource does
	// not.
	seen := map[string][]string{}
	for _, r := range got.Resources {
		seen[r.Address] = r.SeenIn
	}
	require.Equal(t, []string{drift.SeenInPlanned}, seen["t_x.a"])
	require.Equal(t, []string{drift.SeenInPlanned}, seen["t_x.c"])
	require.NotContains(t, seen, "data.t_d.gone")
	require.Equal(t, []string{drift.SeenInState}, seen["data.t_d.d"])
	require.NotContains(t, fmt.Sprintf("%+v", got), canary)
}

// Resource identity (a change's before and after identity, fields 7 and
// 8, and an import by identity: Terraform's Importing has it as field 3,
// beside unknown as 2, OpenTofu's as field 2) is skipped: planparse reads
// no identity from a change, and no identity value reaches the summary.
func TestDecodeIdentitySkipped(t *testing.T) {
	identity := pbDynamic(obj("id", mpStr(canary)))
	update := ric{addr: "t_x.a", action: actionUpdate, importing: true,
		values: [][]byte{obj("id", mpOne, "name", mpStr("old")), obj("id", mpOne, "name", mpStr("new"))}}
	want, err := decodeTFPlan(t, tfplan(pbChange(update)))
	require.NoError(t, err)
	require.Len(t, want.Changes, 1)
	require.True(t, want.Changes[0].Importing)
	require.Equal(t, []string{"name"}, want.Changes[0].Attributes)
	for name, importing := range map[string][]byte{
		"terraform": concat(pbVarint(2, 1), pbBytes(3, identity)),
		"tofu":      pbBytes(2, identity),
	} {
		t.Run(name, func(t *testing.T) {
			c := update
			c.importingMsg = importing
			c.changeExtra = concat(pbBytes(7, identity), pbBytes(8, identity))
			got, err := decodeTFPlan(t, tfplan(pbChange(c)))
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.NotContains(t, fmt.Sprintf("%+v", got), canary)
		})
	}
}

// TestDecodeRefreshOnly: in refresh-only mode a no-op drift entry (a move)
// is drift; a data resource's delete still is not.
func TestDecodeRefreshOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		uiMode uint64
		want   []string
	}{
		{"normal", 0, nil},
		{"destroy", 1, nil},
		{"refresh-only", uiModeRefreshOnly, []string{"t_x.c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeTFPlan(t, tfplan(
				pbVarint(planUIMode, tc.uiMode),
				pbDrift(ric{addr: "t_x.c", action: actionNoop, values: [][]byte{obj("id", mpOne)}}),
				pbDrift(ric{addr: "data.t_d.gone", action: actionDelete, values: [][]byte{obj("id", mpOne)}}),
			))
			require.NoError(t, err)
			var addrs []string
			for _, d := range got.Drift {
				addrs = append(addrs, d.Address)
				require.Equal(t, []string{"no-op"}, d.Actions)
			}
			require.Equal(t, tc.want, addrs)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	secretObj := obj("secret", mpStr(canary))
	update := func(before, after []byte) []byte {
		return pbChange(ric{addr: "t_x.a", action: actionUpdate, values: [][]byte{before, after}})
	}
	for _, tc := range []struct {
		name      string
		plan      []byte
		want      string
		needsShow bool
	}{
		{"failed check", tfplan(pbCheck(checkPass), pbCheck(2)), "1 checks did not pass", true},
		{"check with unknown status", tfplan(pbCheck(0)), "1 checks did not pass", true},
		{"deferred changes", tfplan(pbBytes(planDeferred, nil)), "deferred", true},
		{"action invocation", tfplan(update(secretObj, secretObj), pbBytes(planActions, nil)), "action invocations", true},
		{"deferred action invocation", tfplan(pbBytes(planDeferredActions, nil)), "action invocations", true},
		{"tfplan version 2", concat(pbVarint(planVersion, 2), update(secretObj, secretObj)), "tfplan format version 2", false},
		{"no tfplan version", update(secretObj, secretObj), "tfplan format version 0", false},
		{"truncated varint", concat(tfplan(update(secretObj, secretObj)), protowire.AppendTag(nil, planUIMode, protowire.VarintType), []byte{0x80}), "malformed tfplan", false},
		{"truncated length", concat(tfplan(), protowire.AppendTag(nil, planResourceChanges, protowire.BytesType), []byte{0x40}, secretObj), "malformed tfplan", false},
		{"version of the wrong wire type", pbBytes(planVersion, []byte(canary)), "not a varint", false},
		{"address of the wrong wire type", tfplan(pbBytes(planResourceChanges, pbVarint(ricAddr, 1))), "not length-delimited", false},
		{"malformed before", tfplan(update(concat([]byte{0x82}, mpStr("secret"), mpStr(canary)), secretObj)), "t_x.a: before: malformed msgpack", false},
		{"malformed after", tfplan(update(secretObj, concat(secretObj, mpStr(canary)))), "t_x.a: after: malformed msgpack", false},
		{"unknown action", tfplan(pbChange(ric{addr: "t_x.a", action: 42, values: [][]byte{secretObj, secretObj}})), "unknown action 42", false},
		{"unknown reason", tfplan(pbChange(ric{addr: "t_x.a", action: actionUpdate, reason: 99, values: [][]byte{secretObj, secretObj}})), "unknown action reason 99", false},
		{"malformed address", tfplan(pbChange(ric{addr: "t_x", action: actionUpdate, values: [][]byte{secretObj, secretObj}})), "malformed resource instance address", false},
		{"sensitive set element", tfplan(pbChange(ric{
			addr: "t_x.a", action: actionUpdate, values: [][]byte{secretObj, secretObj},
			afterSens: []rawPath{{attrStep("s"), keyStep(mpArr(mpStr(canary)))}},
		})), "inside a set", false},
		{"value not in msgpack", tfplan(pbBytes(planResourceChanges, concat(
			pbBytes(ricAddr, []byte("t_x.a")),
			pbBytes(ricChange, concat(pbVarint(changeAction, actionUpdate), pbBytes(changeValues, pbBytes(2, []byte(`{"secret":"`+canary+`"}`))))),
		))), "serialization other than msgpack", false},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			got, err := decodeTFPlan(t, tc.plan)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, got)
			require.Equal(t, tc.needsShow, errors.Is(err, ErrNeedsShow), "errors.Is(err, ErrNeedsShow)")
			require.NotContains(t, err.Error(), canary)
		})
	}
}

// TestParsePlanMalformed covers parsePlan itself: every malformed message
// is errProto, whatever level the damage is at.
func TestParsePlanMalformed(t *testing.T) {
	change := ric{addr: "t_x.a", action: actionUpdate, values: [][]byte{mpStr(canary), mpStr(canary)}}.encode()
	for name, b := range map[string][]byte{
		"truncated tag":              {0x80},
		"truncated varint":           {0x08, 0xff},
		"truncated change":           pbBytes(planResourceChanges, change)[:len(change)/2],
		"truncated inside a change":  pbBytes(planResourceChanges, change[:len(change)-2]),
		"truncated relevant path":    pbBytes(planRelevantAttrs, pbBytes(relevantAttr, []byte{0x0a, 0x05})),
		"output name not bytes":      pbBytes(planOutputChanges, pbVarint(outputName, 1)),
		"check status not a varint":  pbBytes(planCheckResults, pbBytes(checkStatus, nil)),
		"step key not bytes":         pbBytes(planRelevantAttrs, pbBytes(relevantAttr, pbBytes(pathSteps, pbVarint(stepElementKey, 1)))),
		"group wire type unbalanced": protowire.AppendTag(nil, 50, protowire.StartGroupType),
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			_, err := parsePlan(b)
			require.ErrorIs(t, err, errProto)
			require.NotContains(t, err.Error(), canary)
		})
	}
}

// The decoder never panics on any input, and what it accepts renders as
// valid JSON in both renderings show -json uses.
func FuzzDecodeMsgpack(f *testing.F) {
	for _, tc := range msgpackCases {
		f.Add(tc.in)
	}
	for _, tc := range msgpackErrorCases {
		f.Add(tc.in)
	}
	f.Add([]byte{0x81, 0xa1, 0xff, 0xc0}) // invalid UTF-8 key
	f.Add(nested(maxDepth + 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeMsgpack(data)
		if err != nil {
			require.ErrorIs(t, err, errMsgpack)
			return
		}
		if js := v.appendJSON(nil); !json.Valid(js) {
			t.Fatalf("appendJSON is not valid JSON: %q from %x", js, data)
		}
		if u := v.appendUnknown(nil); !json.Valid(u) {
			t.Fatalf("appendUnknown is not valid JSON: %q from %x", u, data)
		}
		// elementKey and pathString take the same bytes as a path key.
		_ = pathString(rawPath{keyStep(data)})
	})
}

func TestProviderSource(t *testing.T) {
	for addr, want := range map[string]string{
		`provider["registry.terraform.io/hashicorp/aws"]`:                    "registry.terraform.io/hashicorp/aws",
		`module.m.provider["registry.terraform.io/hashicorp/aws"].west`:      "registry.terraform.io/hashicorp/aws",
		`module.a.module.b.provider["registry.opentofu.org/hashicorp/null"]`: "registry.opentofu.org/hashicorp/null",
		`provider.aws`: "",
		`provider["x`:  "",
		``:             "",
	} {
		require.Equal(t, want, providerSource(addr), addr)
	}
}
