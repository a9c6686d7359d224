package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/terraform/planfile"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

var (
	bigOnce sync.Once
	bigData []byte

	bigFileOnce sync.Once
	bigFile     []byte
)

// bigPlanFile generates the saved plan file of the same plan once per
// process.
func bigPlanFile(tb testing.TB) []byte {
	tb.Helper()
	bigFileOnce.Do(func() { bigFile = genPlanFile(bigPlan) })
	return bigFile
}

// bigPlanJSON generates the ~50 MB plan once per process.
func bigPlanJSON(tb testing.TB) []byte {
	tb.Helper()
	bigOnce.Do(func() { bigData = genPlan(bigPlan) })
	if mb := float64(len(bigData)) / 1e6; mb < 45 || mb > 60 {
		tb.Fatalf("generated plan is %.1f MB, want about 50 MB", mb)
	}
	return bigData
}

func defaultRules() policy.Rules {
	return policy.Rules{Forbidden: []policy.Glob{
		policy.MustCompileGlob("kubernetes_*"),
		policy.MustCompileGlob("helm_release"),
	}}
}

// reportThroughput reports MB/s and allocated bytes per input byte.
func reportThroughput(b *testing.B, size int, elapsed time.Duration) {
	b.Helper()
	perOp := elapsed.Seconds() / float64(b.N)
	b.ReportMetric(float64(size)/1e6/perOp, "MB/s")
	b.ReportMetric(float64(size)/1e6, "input-MB")
}

// TestGeneratedPlanIsRealistic checks the generator on a tenth of the
// workload (the race detector makes the full one slow): tfjson accepts it
// (so the naive path parses it) and it classifies as intended. The size of
// the full plan is checked by the benchmarks.
func TestGeneratedPlanIsRealistic(t *testing.T) {
	spec := bigPlan
	spec.Resources /= 10
	data := genPlan(spec)
	if mb := float64(len(data)) / 1e6; mb < 4.5 || mb > 6 {
		t.Fatalf("generated plan is %.1f MB, want about 5 MB", mb)
	}
	var naive tfjson.Plan
	if err := json.Unmarshal(data, &naive); err != nil {
		t.Fatalf("tfjson rejects the generated plan: %v", err)
	}
	p, err := planparse.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Drift) != len(naive.ResourceDrift) || len(p.Changes)+len(p.NoOp) != len(naive.ResourceChanges) {
		t.Fatalf("planparse saw %d drift / %d changes, tfjson %d / %d",
			len(p.Drift), len(p.Changes)+len(p.NoOp), len(naive.ResourceDrift), len(naive.ResourceChanges))
	}
	c := drift.CountFindings(policy.Classify(p, defaultRules()))
	t.Logf("%.1f MB, %d resources, %d drifted; findings: %+v", float64(len(data))/1e6,
		len(naive.ResourceChanges), len(naive.ResourceDrift), c)
	if c.Drift != len(naive.ResourceDrift) || c.Pending != 0 || c.Forbidden == 0 || c.Noise != 0 {
		t.Fatalf("unexpected counts %+v", c)
	}
}

// The generated plan file is the generated plan JSON's plan: decoded, it
// has the same drift and changes, paths included, and the same findings.
func TestGeneratedPlanFileMatchesJSON(t *testing.T) {
	spec := bigPlan
	spec.Resources /= 10
	fromJSON, err := planparse.Parse(bytes.NewReader(genPlan(spec)))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "plan.tfplan")
	require.NoError(t, os.WriteFile(file, genPlanFile(spec), 0o600))
	decoded, err := planfile.Decode(file)
	require.NoError(t, err)
	require.NotEmpty(t, fromJSON.Drift)
	// The generator writes JSON in generation order, Terraform sorts.
	require.ElementsMatch(t, fromJSON.Drift, decoded.Drift)
	require.ElementsMatch(t, fromJSON.Changes, decoded.Changes)
	require.ElementsMatch(t, policy.Classify(fromJSON, defaultRules()), policy.Classify(decoded, defaultRules()))
}

// BenchmarkPlan50MB compares, side by side in one run, our streaming
// Parse+Classify against the naive json.Unmarshal into tfjson.Plan (what
// tfexec's ShowPlanFile does, minus its extra stdout copy).
func BenchmarkPlan50MB(b *testing.B) {
	data := bigPlanJSON(b)
	rules := defaultRules()
	b.Run("planparse+classify", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			p, err := planparse.Parse(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			if fs := policy.Classify(p, rules); len(fs) == 0 {
				b.Fatal("no findings")
			}
		}
		reportThroughput(b, len(data), time.Since(start))
	})
	b.Run("tfjson-unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			var p tfjson.Plan
			if err := json.Unmarshal(data, &p); err != nil {
				b.Fatal(err)
			}
		}
		reportThroughput(b, len(data), time.Since(start))
	})
	// What a run does instead of show -json: the saved plan file of the
	// same plan decoded (planfile.Decode) and classified. MB/s are of the
	// show -json document it stands for, so the figures compare.
	b.Run("planfile-decode+classify", func(b *testing.B) {
		file := filepath.Join(b.TempDir(), "plan.tfplan")
		if err := os.WriteFile(file, bigPlanFile(b), 0o600); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			p, err := planfile.Decode(file)
			if err != nil {
				b.Fatal(err)
			}
			if fs := policy.Classify(p, rules); len(fs) == 0 {
				b.Fatal("no findings")
			}
		}
		reportThroughput(b, len(data), time.Since(start))
		b.ReportMetric(float64(len(bigPlanFile(b)))/1e6, "planfile-MB")
	})
}

// Peak memory is a process-wide figure, so it is measured in child
// processes (this test binary re-executed): each reads the plan file the
// way the named path would and reports its peak RSS (VmHWM).
const childEnv = "DRIFTWATCH_BENCH_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode, os.Getenv(childEnv+"_FILE")))
	}
	os.Exit(m.Run())
}

func child(mode, file string) int {
	start := time.Now()
	var err error
	switch mode {
	case "planparse-stream":
		// What the local runner does: show -json piped into Parse.
		var f *os.File
		if f, err = os.Open(file); err == nil {
			var p *planparse.Plan
			if p, err = planparse.Parse(bufio.NewReaderSize(f, 1<<20)); err == nil {
				policy.Classify(p, defaultRules())
			}
			f.Close()
		}
	case "planparse-bytes":
		var data []byte
		if data, err = os.ReadFile(file); err == nil {
			var p *planparse.Plan
			if p, err = planparse.Parse(bytes.NewReader(data)); err == nil {
				policy.Classify(p, defaultRules())
			}
		}
	case "planfile-decode":
		// What the local runner does now: the plan file decoded.
		var p *planparse.Plan
		if p, err = planfile.Decode(file); err == nil {
			policy.Classify(p, defaultRules())
		}
	case "tfjson-unmarshal":
		var data []byte
		if data, err = os.ReadFile(file); err == nil {
			var p tfjson.Plan
			err = json.Unmarshal(data, &p)
		}
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("%s %d\n", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), time.Since(start).Nanoseconds())
			return 0
		}
	}
	return 1
}

// BenchmarkPeakRSS50MB reports peak resident memory for each path, as MB and
// as a multiple of the plan size (for planfile-decode, which reads the
// saved plan file of the same plan, of the size of that plan's JSON).
func BenchmarkPeakRSS50MB(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	data := bigPlanJSON(b)
	file := filepath.Join(b.TempDir(), "plan.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	planFile := filepath.Join(b.TempDir(), "plan.tfplan")
	if err := os.WriteFile(planFile, bigPlanFile(b), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"planparse-stream", "planparse-bytes", "planfile-decode", "tfjson-unmarshal"} {
		b.Run(mode, func(b *testing.B) {
			file := file
			if mode == "planfile-decode" {
				file = planFile
			}
			var peakKB, nanos float64
			for range b.N {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), childEnv+"="+mode, childEnv+"_FILE="+file)
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("child %s: %v", mode, err)
				}
				fields := strings.Fields(string(out))
				if len(fields) != 2 {
					b.Fatalf("child %s printed %q", mode, out)
				}
				kb, _ := strconv.ParseFloat(fields[0], 64)
				ns, _ := strconv.ParseFloat(fields[1], 64)
				peakKB = max(peakKB, kb)
				nanos += ns
			}
			b.ReportMetric(peakKB/1024, "peak-RSS-MiB")
			b.ReportMetric(peakKB*1024/float64(len(data)), "peak/input")
			b.ReportMetric(nanos/float64(b.N)/1e6, "child-ms")
		})
	}
}
