package presets

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
)

// ycsbWorkload is what one of YCSB's core workload files (workloads/workloada .. f in
// github.com/brianfrankcooper/YCSB) sets: the operation proportions, the request
// distribution and the record count; records are the CoreWorkload default of 10 fields
// of 100 bytes.
type ycsbWorkload struct {
	read, update, insert, scan, rmw float64
	distribution                    string
	records                         int64
}

// ycsbFiles are YCSB's files as published (go-ycsb's copies differ: they set
// requestdistribution=uniform and maxscanlength=1, so they are not the reference).
var ycsbFiles = map[string]ycsbWorkload{
	"ycsb-a": {read: 0.5, update: 0.5, distribution: "zipfian", records: 1000},
	"ycsb-b": {read: 0.95, update: 0.05, distribution: "zipfian", records: 1000},
	"ycsb-c": {read: 1, distribution: "zipfian", records: 1000},
	"ycsb-d": {read: 0.95, insert: 0.05, distribution: "latest", records: 1000},
	"ycsb-e": {scan: 0.95, insert: 0.05, distribution: "zipfian", records: 1000},
	"ycsb-f": {read: 0.5, rmw: 0.5, distribution: "zipfian", records: 1000},
}

// ycsbPattern is the ndbench pattern that draws keys as YCSB's requestdistribution does
// (internal/workload's ycsb_test.go checks each against go-ycsb's generators).
var ycsbPattern = map[string]string{"zipfian": "ycsb_zipfian", "latest": "latest", "uniform": "uniform", "hotspot": "hotspot", "exponential": "exponential"}

// TestYCSBPresetsMatchYCSBWorkloads: the share of each kind of operation a YCSB preset
// runs, from its classes' open-loop rates and mixes, is the proportion YCSB's workload
// file gives; so are the key distribution, the record count and the record size. The
// rates are a schedule, not a sample, so the shares are compared exactly.
func TestYCSBPresetsMatchYCSBWorkloads(t *testing.T) {
	for name, y := range ycsbFiles {
		t.Run(name, func(t *testing.T) {
			p, ok := Lookup(name)
			if !ok {
				t.Fatalf("no preset %s", name)
			}
			l, err := p.Layer()
			if err != nil {
				t.Fatal(err)
			}
			w := config.DefaultWorkload()
			get := func(key, def string) string {
				if v, ok := l.Values["workload."+key]; ok {
					return v
				}
				return def
			}
			rate := func(class string, r float64, enabled bool) float64 {
				if v, err := strconv.ParseBool(get(class+"Enabled", strconv.FormatBool(enabled))); err != nil || !v {
					return 0
				}
				f, err := strconv.ParseFloat(get(class+"Rate", strconv.FormatFloat(r, 'g', -1, 64)), 64)
				if err != nil {
					t.Fatalf("%sRate: %v", class, err)
				}
				return f
			}
			share := map[string]float64{}
			var total float64
			for _, c := range []struct {
				class, mix, def string
				rate            float64
			}{
				{"read", get("readMix", w.ReadMix), config.ClassRead, rate("read", w.ReadRate, w.ReadEnabled)},
				{"write", get("writeMix", w.WriteMix), config.ClassWrite, rate("write", w.WriteRate, w.WriteEnabled)},
			} {
				m, err := config.ParseMix(c.mix, c.def)
				if err != nil {
					t.Fatalf("%s mix %q: %v", c.class, c.mix, err)
				}
				var weights float64
				for _, e := range m {
					weights += e.Weight
				}
				for _, e := range m {
					share[e.Op] += c.rate * e.Weight / weights
				}
				total += c.rate
			}
			for op := range share {
				share[op] /= total
			}
			// ndbench's operation names against YCSB's kinds. A plain write is YCSB's update;
			// YCSB's insert is ndbench's insert (a new key: the keyspace grows); in F a
			// write stands for the read-modify-write only while the preset says that it is
			// approximated.
			write := y.update
			if y.rmw > 0 && share["rmw"] == 0 {
				if !strings.Contains(p.Description, "RMW approximated") {
					t.Errorf("the preset runs no rmw operation for YCSB's readmodifywriteproportion %v and does not say it approximates it: %q", y.rmw, p.Description)
				}
				write += y.rmw
			} else if share["rmw"] != y.rmw {
				t.Errorf("rmw share %v, YCSB's readmodifywriteproportion %v", share["rmw"], y.rmw)
			}
			writes := share["write"] + share["update"]
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"read", share["read"], y.read}, {"scan", share["scan"], y.scan},
				{"write and update", writes, write},
				{"insert", share["insert"], y.insert},
			} {
				if math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("share of %s %v, want %v (YCSB: read %v update %v insert %v scan %v rmw %v; preset's shares %v)",
						c.what, c.got, c.want, y.read, y.update, y.insert, y.scan, y.rmw, share)
				}
			}
			for op := range share {
				switch op {
				case "read", "scan", "write", "insert", "update", "rmw":
				default:
					t.Errorf("operation %s is none of YCSB's kinds", op)
				}
			}
			if got, want := get("pattern", w.Pattern), ycsbPattern[y.distribution]; got != want {
				t.Errorf("pattern %s, want %s for YCSB's requestdistribution=%s", got, want, y.distribution)
			}
			if got := get("numKeys", ""); got != strconv.FormatInt(y.records, 10) {
				t.Errorf("numKeys %s, YCSB's recordcount %d", got, y.records)
			}
			if got := get("dataSize", ""); got != "1000" {
				t.Errorf("dataSize %s, YCSB's records are 10 fields of 100 bytes", got)
			}
			// CoreWorkload's zipfian chooser spreads over recordcount+1+expectednewkeys keys,
			// expectednewkeys = operationcount × insertproportion × 2 (every file sets
			// operationcount 1000).
			if y.distribution == "zipfian" {
				want := ""
				if e := int64(1000 * y.insert * 2); e > 0 {
					want = "expectedNewKeys=" + strconv.FormatInt(e, 10)
				}
				if got := get("patternOptions", ""); got != want {
					t.Errorf("patternOptions %q, want %q for YCSB's expectednewkeys", got, want)
				}
			}
			if z := get("zipfExponent", ""); y.distribution != "uniform" && z != "0.99" {
				t.Errorf("zipfExponent %s, YCSB's ZipfianGenerator.ZIPFIAN_CONSTANT is 0.99", z)
			}
		})
	}
}
