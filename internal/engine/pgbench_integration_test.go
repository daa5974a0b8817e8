//go:build integration

package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
)

// pgbenchSeconds is how long pgbench runs, as long as ndbench's measured run.
const pgbenchSeconds = effSeconds

// reportPgbench runs pgbench on the server ndbench just measured and reports its figures
// and ndbench's beside them: client CPU per op as a ratio, and latency percentiles.
// ndbenchOpsPerCPU is ndbench's ops per client CPU-second; cum its cumulative statistics.
func reportPgbench(b *testing.B, srv *testserver.Server, pipeline int, ndbenchOpsPerCPU float64, cum stats.Summary) {
	b.Helper()
	pb, err := pgbench(srv, 50, 100, 100000, pipeline, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	read := cum.Ops["read"].ServiceTime
	b.ReportMetric(read.P50, "read-p50-µs")
	b.ReportMetric(read.P99, "read-p99-µs")
	b.ReportMetric(float64(pb.p50.Microseconds()), "pgbench-read-p50-µs")
	b.ReportMetric(float64(pb.p99.Microseconds()), "pgbench-read-p99-µs")
	b.ReportMetric(pb.ops/pb.secs, "pgbench-ops/s")
	b.ReportMetric(pb.ops/pb.cpu, "pgbench-ops/client-CPU-s")
	b.ReportMetric(ndbenchOpsPerCPU/(pb.ops/pb.cpu), "ratio-vs-pgbench")
}

// pgbenchResult is what one pgbench run measured.
type pgbenchResult struct {
	ops, cpu, secs float64       // statements run, pgbench's CPU seconds, wall seconds
	p50, p99       time.Duration // latency of the read script's transactions
}

var pgbenchProcessed = regexp.MustCompile(`number of transactions actually processed: (\d+)`)

// pgbench runs pgbench -M prepared with c connections on one thread against the ndbench
// table the driver created (keys T0..T<keys-1>, as the engine names them), 80% reads and
// 20% upserts of d-byte values, for pgbenchSeconds. With pipeline > 1 each transaction is
// a \startpipeline block of that many statements of one kind (the read script weighs 80,
// the upsert script 20), so its latency is a whole block's. pgbench's own CPU comes from
// its rusage; its latencies from a sampled per-transaction log (--log), so logging costs
// it little.
func pgbench(srv *testserver.Server, c, d, keys, pipeline int, dir string) (pgbenchResult, error) {
	var res pgbenchResult
	if err := pgbenchKeysPresent(srv, keys); err != nil {
		return res, err
	}
	perTxn := max(pipeline, 1)
	script := func(stmt string) string {
		var sb strings.Builder
		for i := 0; i < perTxn; i++ {
			fmt.Fprintf(&sb, "\\set k%d random(0, %d)\n", i, keys-1)
		}
		if perTxn > 1 {
			sb.WriteString("\\startpipeline\n")
		}
		for i := 0; i < perTxn; i++ {
			sb.WriteString(strings.ReplaceAll(stmt, ":k", ":k"+strconv.Itoa(i)) + ";\n")
		}
		if perTxn > 1 {
			sb.WriteString("\\endpipeline\n")
		}
		return sb.String()
	}
	// The driver's SQL: its key is text, its value bytea (docs: drivers/postgres).
	readSQL := script(`SELECT value FROM ndbench WHERE key = 'T' || :k::text`)
	writeSQL := script(`INSERT INTO ndbench (key, value) VALUES ('T' || :k::text, :v::bytea) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`)
	readFile, writeFile := filepath.Join(dir, "read.sql"), filepath.Join(dir, "write.sql")
	if err := os.WriteFile(readFile, []byte(readSQL), 0o644); err != nil {
		return res, fmt.Errorf("write pgbench script: %w", err)
	}
	if err := os.WriteFile(writeFile, []byte(writeSQL), 0o644); err != nil {
		return res, fmt.Errorf("write pgbench script: %w", err)
	}
	prefix := filepath.Join(dir, "pgbench_log")
	cmd := exec.Command("pgbench", "-h", srv.Host, "-p", strconv.Itoa(srv.Port), "-U", "postgres",
		"-n", "-M", "prepared", "-c", strconv.Itoa(c), "-j", "1", "-T", strconv.Itoa(pgbenchSeconds),
		"-f", readFile+"@80", "-f", writeFile+"@20", "-D", "v="+strings.Repeat("x", d),
		"--log", "--log-prefix", prefix, "--sampling-rate", "0.05", "postgres")
	cmd.Dir = dir
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	res.secs = time.Since(t0).Seconds()
	if err != nil {
		return res, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := pgbenchProcessed.FindSubmatch(out)
	if m == nil {
		return res, fmt.Errorf("pgbench printed no transaction count: %s", out)
	}
	txns, _ := strconv.ParseFloat(string(m[1]), 64)
	res.ops = txns * float64(perTxn)
	res.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	lat, err := pgbenchLatencies(prefix, 0)
	if err != nil {
		return res, err
	}
	if len(lat) == 0 {
		return res, fmt.Errorf("pgbench logged no read transactions: %s", out)
	}
	slices.Sort(lat)
	res.p50, res.p99 = lat[len(lat)*50/100], lat[len(lat)*99/100]
	return res, nil
}

// pgbenchKeysPresent checks that every key pgbench's scripts draw (T0..T<keys-1>) is in
// the ndbench table, so its reads find a row as ndbench's do: a peer that reads nothing
// does less work and is no comparison (the redis-benchmark misses, design-notes.md).
// pgbench itself does not report a SELECT that found no row.
func pgbenchKeysPresent(srv *testserver.Server, keys int) error {
	q := fmt.Sprintf(`SELECT count(*) FROM ndbench WHERE key ~ '^T(0|[1-9][0-9]{0,8})$' AND substr(key, 2)::bigint < %d`, keys)
	out, err := psql(srv, q)
	if err != nil {
		return fmt.Errorf("count the keys pgbench reads: %w: %s", err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("count the keys pgbench reads: psql printed %q", out)
	}
	if n != keys {
		return fmt.Errorf("the ndbench table holds %d of the %d keys pgbench reads (T0..T%d): its SELECTs would miss", n, keys, keys-1)
	}
	return nil
}

// psql runs one SQL command on srv and returns what it printed, unaligned and without
// headers.
func psql(srv *testserver.Server, sql string) ([]byte, error) {
	return exec.Command("psql", "-h", srv.Host, "-p", strconv.Itoa(srv.Port), "-U", "postgres",
		"-d", "postgres", "-XtAc", sql).CombinedOutput()
}

// pgbenchLatencies reads the latencies of script number script from pgbench's logs
// (prefix.<pid>[.<thread>]), whose lines are: client_id transaction_no time script_no
// time_epoch time_us, time being the transaction's latency in microseconds.
func pgbenchLatencies(prefix string, script int) ([]time.Duration, error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("pgbench wrote no log at %s.*: %v", prefix, err)
	}
	var lat []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read pgbench log: %w", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != strconv.Itoa(script) {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				continue // "skipped" for a late transaction under -R; not used here
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
		err = sc.Err()
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("read pgbench log %s: %w", name, err)
		}
	}
	return lat, nil
}

// TestPgbenchKeysPresent checks the pgbench comparison's guard: it passes when the table
// holds every key pgbench draws and fails, naming the shortfall, when one is missing.
func TestPgbenchKeysPresent(t *testing.T) {
	srv, err := testserver.Postgres(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	for _, sql := range []string{
		`CREATE TABLE ndbench (key text PRIMARY KEY, value bytea)`,
		`INSERT INTO ndbench SELECT 'T' || i, 'x' FROM generate_series(0, 9) i`,
		`INSERT INTO ndbench VALUES ('T010', 'x'), ('X3', 'x'), ('T12', 'x')`, // none of them is T10
	} {
		if out, err := psql(srv, sql); err != nil {
			t.Fatalf("psql %s: %v: %s", sql, err, out)
		}
	}
	if err := pgbenchKeysPresent(srv, 10); err != nil {
		t.Errorf("T0..T9 stored, pgbench reading 10 keys: %v", err)
	}
	err = pgbenchKeysPresent(srv, 11)
	if err == nil || !strings.Contains(err.Error(), "holds 10 of the 11 keys") {
		t.Errorf("T10 missing, pgbench reading 11 keys: got %v, want an error that 10 of 11 are there", err)
	}
}
