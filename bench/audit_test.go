package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// BenchmarkAuditVsShellLoop measures, side by side in one run and with the
// real Terraform binary, the same workspaces three ways:
//
//   - raw: init + plan -out + show -json per workspace, sequentially, timed
//     per workspace (the sum is the work there is to do);
//   - naive: a sequential shell loop of `init && plan`, what people write;
//   - driftwatch audit at concurrency 1 and at the default concurrency 4.
//
// Reported ratios: overhead_seq = audit(c=1)/raw_sum - 1 (scheduling,
// sandboxing and parsing overhead; goal < 5%), audit_vs_loop =
// audit(c=4)/naive, the wall time against the loop (goals on a 2-core
// machine: <= 0.55 cpu-bound, <= 0.3 with 1 s latency; 0.5 is the loop's
// own work split over two cores), speedup_vs_naive = its inverse,
// efficiency_vs_cores = (raw_sum / min(4, NumCPU)) / audit(c=4) (1.0 is
// perfect CPU scaling), cached_vs_loop, audit_vs_loop for an audit
// with --cache-dir whose workspaces did not change since the last one,
// and, for the api-latency workload, c8_vs_loop: all 8 workspaces at once
// (--concurrency 8). At concurrency 4 the 8 plans wait for the API in two
// waves, 2 s of the loop's ~11 s before any CPU work, so 0.3 needs more
// runners than that; plans that wait cost memory, not cores.
//
//	make bench   (or: go test -run '^$' -bench AuditVsShellLoop -benchtime 1x ./bench)
//
// Workloads: "cpu-bound" (local resources only: every plan is pure
// Terraform CPU, the worst case for concurrency on a small machine),
// "api-latency" (each plan also waits 1 s in a provider read, standing in
// for the cloud API round trips of a real refresh), each with a file of
// every workspace edited behind Terraform's back, so every plan has drift
// to classify (show -json runs; the loop never pays for it), and
// "cpu-bound-clean", the same workspaces unchanged, as most scheduled
// checks find them (no show -json).
func BenchmarkAuditVsShellLoop(b *testing.B) {
	b.Run("cpu-bound", func(b *testing.B) { benchAudit(b, "", true) })
	b.Run("cpu-bound-clean", func(b *testing.B) { benchAudit(b, "", false) })
	b.Run("api-latency", func(b *testing.B) { benchAudit(b, "1s", true) })
}

func benchAudit(b *testing.B, latency string, drifted bool) {
	bins := strings.Fields(os.Getenv("DRIFTWATCH_TF_BINARIES"))
	cli := os.Getenv("DRIFTWATCH_TF_CLI_CONFIG")
	if len(bins) == 0 || cli == "" {
		tftest.Unavailable(b, "needs DRIFTWATCH_TF_BINARIES and DRIFTWATCH_TF_CLI_CONFIG (make bench)")
	}
	tf := bins[0]
	const n = 8
	root := b.TempDir()
	dwBin := filepath.Join(root, "driftwatch")
	if out, err := exec.Command("go", "build", "-o", dwBin, "github.com/driftwatch/driftwatch/cmd/driftwatch").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TF_CLI_CONFIG_FILE=" + cli, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	run := func(dir string, name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
				b.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
		}
	}
	// n workspaces, each with a few real resources; applied once, then one
	// file per workspace is edited so every plan has real drift to refresh.
	var ws strings.Builder
	// sandbox_paths: the runs' jail must see the files the resources
	// manage, or audit plans different work (every file "deleted") from
	// the loop it is compared with.
	fmt.Fprintf(&ws, "terraform:\n  binary: %s\n  cli_config_file: %s\n  sandbox_paths: [%s]\nworkspaces:\n", tf, cli, root)
	src := filepath.Join(root, "src")
	for i := range n {
		dir := filepath.Join(src, fmt.Sprintf("ws%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		main := `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
resource "dwtest_file" "f" {
  count    = 5
  filename = "` + dir + `/out-${count.index}.txt"
  content  = "v${count.index}"
}
resource "terraform_data" "d" {
  count = 20
  input = { index = count.index }
}
`
		if latency != "" {
			main += `data "dwtest_sleep" "api" {
  duration = "` + latency + `"
}
`
		}
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
			b.Fatal(err)
		}
		run(dir, tf, "init", "-input=false")
		run(dir, tf, "apply", "-auto-approve", "-input=false")
		if drifted {
			if err := os.WriteFile(filepath.Join(dir, "out-0.txt"), []byte("edited"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		fmt.Fprintf(&ws, "  - name: ws%d\n    source: { path: %s }\n", i, dir)
	}
	cfg := filepath.Join(root, "driftwatch.yaml")
	if err := os.WriteFile(cfg, []byte(ws.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	// fresh returns copies of the workspaces without .terraform, so every
	// method pays for init like driftwatch does.
	fresh := func(tag string) []string {
		var dirs []string
		for i := range n {
			from := filepath.Join(src, fmt.Sprintf("ws%d", i))
			to := filepath.Join(root, tag, fmt.Sprintf("ws%d", i))
			if err := exec.Command("cp", "-r", from, to).Run(); err != nil {
				_ = os.MkdirAll(filepath.Dir(to), 0o755)
				if out, err := exec.Command("cp", "-r", from, to).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v %s", err, out)
				}
			}
			_ = os.RemoveAll(filepath.Join(to, ".terraform"))
			dirs = append(dirs, to)
		}
		return dirs
	}
	cacheDir := filepath.Join(root, "cache")
	audit := func(c int, extra ...string) time.Duration {
		start := time.Now()
		cmd := exec.Command(dwBin, append([]string{"audit", "--config", cfg, "--format", "json", "--concurrency", fmt.Sprint(c)}, extra...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
		out, err := cmd.CombinedOutput()
		want := 0
		if drifted {
			want = 2
		}
		if code := cmd.ProcessState.ExitCode(); code != want {
			b.Fatalf("audit: exit %d, want %d: %v\n%s", code, want, err, out)
		}
		return time.Since(start)
	}

	conc := 4   // the audit default
	audit(conc) // warm the page cache
	// and the cache dir: the timed cached audits find every workspace as
	// the last one left it
	audit(conc, "--cache-dir", cacheDir)
	b.ResetTimer()
	var rawSum, naive, seq, par, cached, wide time.Duration
	for range b.N {
		for _, dir := range fresh(fmt.Sprintf("raw%d", rawSum)) {
			start := time.Now()
			run(dir, tf, "init", "-input=false")
			run(dir, tf, "plan", "-detailed-exitcode", "-lock=false", "-input=false", "-out=p.tfplan")
			run(dir, tf, "show", "-json", "p.tfplan")
			rawSum += time.Since(start)
		}
		dirs := fresh(fmt.Sprintf("naive%d", naive))
		script := "set -e\nfor d in " + strings.Join(dirs, " ") + "; do (cd $d && terraform init -input=false >/dev/null && terraform plan -input=false >/dev/null); done\n"
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = slices.Concat(env, []string{"PATH=" + filepath.Dir(tf) + ":" + os.Getenv("PATH")})
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("naive loop: %v\n%s", err, out)
		}
		naive += time.Since(start)
		seq += audit(1)
		par += audit(conc)
		cached += audit(conc, "--cache-dir", cacheDir)
		if latency != "" {
			wide += audit(n)
		}
	}
	b.StopTimer()
	f := float64(b.N)
	b.ReportMetric(rawSum.Seconds()/f, "raw_sum_s")
	b.ReportMetric(naive.Seconds()/f, "naive_loop_s")
	b.ReportMetric(seq.Seconds()/f, "audit_c1_s")
	b.ReportMetric(par.Seconds()/f, fmt.Sprintf("audit_c%d_s", conc))
	b.ReportMetric(cached.Seconds()/f, fmt.Sprintf("audit_cached_c%d_s", conc))
	b.ReportMetric(seq.Seconds()/rawSum.Seconds()-1, "overhead_seq")
	b.ReportMetric(par.Seconds()/naive.Seconds(), "audit_vs_loop")
	b.ReportMetric(cached.Seconds()/naive.Seconds(), "cached_vs_loop")
	b.ReportMetric(naive.Seconds()/par.Seconds(), "speedup_vs_naive")
	if latency != "" {
		// Waiting plans need runners, not cores: every workspace at once.
		b.ReportMetric(wide.Seconds()/f, fmt.Sprintf("audit_c%d_s", n))
		b.ReportMetric(wide.Seconds()/naive.Seconds(), fmt.Sprintf("c%d_vs_loop", n))
	}
	// Perfect scaling is limited by both the concurrency and the cores.
	b.ReportMetric(rawSum.Seconds()/float64(min(conc, runtime.NumCPU()))/par.Seconds(), "efficiency_vs_cores")
}
