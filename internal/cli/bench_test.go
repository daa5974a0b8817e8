package cli

import (
	"path/filepath"
	"testing"
)

// BenchmarkRunPacedRate measures on real time what TestRunWritesReportAndHDRLog no longer
// asserts: the rate a 1.5 s memory run achieves at a target of 2000 reads/s, as the
// achieved/target ratio (1 is on target). Figures are recorded in docs/performance.md;
// they are the machine's, so they are measured here rather than asserted in a test.
func BenchmarkRunPacedRate(b *testing.B) {
	var ratio float64
	for range b.N {
		rep := filepath.Join(b.TempDir(), "r.json")
		code, out, errOut := ndbench(b, nil, "run", "--driver", "memory", "--duration", "1500ms",
			"--set", "workload.readRate=2000", "--set", "workload.writeEnabled=false", "--report", rep)
		if code != 0 {
			b.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		r := readReport(b, rep)
		ratio += r.Ops["read"].Rate / r.Ops["read"].TargetRate
	}
	b.ReportMetric(ratio/float64(b.N), "achieved/target")
}
