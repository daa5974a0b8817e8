package ndbenchapi

import (
	"net/http"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// Stats is NDBench's stats body: the JSON rendering of its NdBenchMonitor
// (NdBenchDefaultMonitor's getters). Counters and latencies cover the span since the
// instance started or its statistics were last reset; the RPS fields cover the last
// one-second interval. Latencies are whole microseconds, as NDBench reports them.
type Stats struct {
	// ReadSuccess counts reads that got an answer, hits and misses alike (NDBench counts
	// a miss as a successful read).
	ReadSuccess  int64 `json:"readSuccess"`
	ReadFailure  int64 `json:"readFailure"`
	WriteSuccess int64 `json:"writeSuccess"`
	WriteFailure int64 `json:"writeFailure"`
	CacheHits    int64 `json:"cacheHits"`
	CacheMiss    int64 `json:"cacheMiss"`
	// CacheHitRatioInt is the hit percentage, truncated to an integer as NDBench does.
	CacheHitRatioInt int64 `json:"cacheHitRatioInt"`
	// ReadRPS and WriteRPS count successes and failures per second, as NDBench's meters
	// do, over the last interval (NDBench: a one-minute moving average).
	ReadRPS       int64  `json:"readRPS"`
	WriteRPS      int64  `json:"writeRPS"`
	ReadLatAvg    int64  `json:"readLatAvg"`
	ReadLatP50    int64  `json:"readLatP50"`
	ReadLatP95    int64  `json:"readLatP95"`
	ReadLatP99    int64  `json:"readLatP99"`
	ReadLatP995   int64  `json:"readLatP995"`
	ReadLatP999   int64  `json:"readLatP999"`
	WriteLatAvg   int64  `json:"writeLatAvg"`
	WriteLatP50   int64  `json:"writeLatP50"`
	WriteLatP95   int64  `json:"writeLatP95"`
	WriteLatP99   int64  `json:"writeLatP99"`
	WriteLatP995  int64  `json:"writeLatP995"`
	WriteLatP999  int64  `json:"writeLatP999"`
	Documentation string `json:"documentation"`
}

// statsDoc is NdBenchMonitor.getDocumentation's answer: what the fields mean.
const statsDoc = "Counters and latencies cover the span since start or the last statistics reset; " +
	"readRPS/writeRPS are operations (successes and failures) per second over the last 1 s interval. " +
	"Latencies are in microseconds: response time measured from each operation's intended start " +
	"(so queueing behind a slow store counts, unlike NDBench's service time), from HDR histograms. " +
	"readSuccess includes cache misses; failures are not in the latency figures."

func (a *api) stats(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, statsOf(a.inst.Collector()))
}

// statsOf builds NDBench's monitor view from the collector. Response time is reported
// rather than service time: with an open-loop rate it is the latency a client of the
// store would see, and it equals service time when the store keeps up.
func statsOf(c *stats.Collector) Stats {
	cum, last := c.Cumulative(), c.Latest()
	r, wr := cum.Ops[config.ClassRead], cum.Ops[config.ClassWrite]
	s := Stats{
		ReadSuccess:   r.Count,
		ReadFailure:   r.Errors,
		WriteSuccess:  wr.Count,
		WriteFailure:  wr.Errors,
		CacheHits:     r.Count - r.Misses,
		CacheMiss:     r.Misses,
		Documentation: statsDoc,
	}
	if r.Count > 0 {
		s.CacheHitRatioInt = s.CacheHits * 100 / r.Count
	}
	if last.Seconds > 0 {
		lr, lw := last.Ops[config.ClassRead], last.Ops[config.ClassWrite]
		s.ReadRPS = int64(float64(lr.Count+lr.Errors) / last.Seconds)
		s.WriteRPS = int64(float64(lw.Count+lw.Errors) / last.Seconds)
	}
	rl, wl := r.ResponseTime, wr.ResponseTime
	s.ReadLatAvg, s.ReadLatP50, s.ReadLatP95 = int64(rl.Mean), int64(rl.P50), int64(rl.P95)
	s.ReadLatP99, s.ReadLatP995, s.ReadLatP999 = int64(rl.P99), int64(rl.P995), int64(rl.P999)
	s.WriteLatAvg, s.WriteLatP50, s.WriteLatP95 = int64(wl.Mean), int64(wl.P50), int64(wl.P95)
	s.WriteLatP99, s.WriteLatP995, s.WriteLatP999 = int64(wl.P99), int64(wl.P995), int64(wl.P999)
	return s
}
