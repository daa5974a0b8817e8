package ndbenchapi

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/workload"
)

const (
	opRead  = config.ClassRead
	opWrite = config.ClassWrite
)

// start serves start, startReads and startWrites: the NDBench query parameters become
// configuration changes (validated as a whole, applied only if valid), then the ops start.
func (a *api) start(ops ...string) handlerFunc {
	what, failMsg := "test", "NdBench start failed!"
	if len(ops) == 1 && ops[0] == opRead {
		what, failMsg = "reads", "NdBench startReads failed!"
	} else if len(ops) == 1 {
		what, failMsg = "writes", "NdBench startWrites failed!"
	}
	return func(w http.ResponseWriter, r *http.Request, _ string) {
		if !a.inst.Status().Initialized {
			fail(w, failMsg, node.ErrNotInitialized)
			return
		}
		if err := r.ParseForm(); err != nil {
			fail(w, failMsg, badParam(err.Error()))
			return
		}
		patch, notes, err := loadPatternPatch(r.Form, a.inst.Config().Config.Workload)
		if err != nil {
			writeResult(w, statusOf(err), false, "Input validation Failure: "+oneLine(err))
			return
		}
		if len(patch) > 0 {
			if _, err := a.inst.Patch(patch); err != nil {
				fail(w, failMsg, namedAsGiven(err, map[string]string{"workload.pattern": "loadPattern",
					"workload.windowSize": "windowSize", "workload.windowDuration": "durationInSec"}))
				return
			}
		}
		// A user's start: from idle it honours workload.warmup.
		if err := a.inst.StartLoad(ops...); err != nil {
			fail(w, failMsg, err)
			return
		}
		success(w, withNotes("NDBench "+what+" started", notes))
	}
}

// loadPatternPatch turns NDBench's start parameters into configuration keys. A parameter
// that is absent (or NDBench's "unset" default, -1) leaves the configured value alone:
// unlike NDBench, which falls back to the random pattern on every start without
// loadPattern, a start here keeps whatever pattern was configured.
func loadPatternPatch(q map[string][]string, cur config.Workload) (map[string]string, []string, error) {
	get := func(k string) (string, bool) {
		v := strings.TrimSpace(first(q[k]))
		return v, v != "" && v != "-1"
	}
	patch := map[string]string{}
	var notes []string
	pattern := cur.Pattern
	if v, ok := get("loadPattern"); ok {
		c, known := workload.CanonicalPattern(v)
		if !known {
			return nil, nil, badParam(fmt.Sprintf("loadPattern %q is not available; allowed: %s", v, strings.Join(loadPatterns(), ", ")))
		}
		pattern = c
		patch["workload.pattern"] = c
	}
	sliding := pattern == workload.PatternSlidingWindow || pattern == workload.PatternSlidingWindowFlip
	windowSize := cur.WindowSize
	if v, ok := get("windowSize"); ok && sliding {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, nil, badParam(fmt.Sprintf("windowSize %q: must be an integer of at least 1", v))
		}
		windowSize = n
		patch["workload.windowSize"] = v
	}
	if v, ok := get("durationInSec"); ok && sliding {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs < 0.001 {
			return nil, nil, badParam(fmt.Sprintf("durationInSec %q: must be a number of seconds of at least 0.001", v))
		}
		// workload.windowDuration is one pass over the keyspace. NDBench's sliding_window
		// duration is exactly that; its sliding_window_flip duration is the time spent in
		// each window, so a pass is that times the number of windows.
		pass := secs
		if pattern == workload.PatternSlidingWindowFlip && windowSize > 0 {
			pass *= float64(max(cur.NumKeys/windowSize, 1))
		}
		// The store would reject it too; checked here to say it in NDBench's terms (the
		// per-window seconds given, not the pass they amount to).
		if pass > workload.MaxWindowDuration.Seconds() {
			return nil, nil, badParam(fmt.Sprintf("durationInSec %q: one pass over the keyspace would take longer than %s", v, workload.MaxWindowDuration))
		}
		patch["workload.windowDuration"] = time.Duration(pass * float64(time.Second)).String()
	}
	if v, ok := get("bulkSize"); ok && v != "1" {
		notes = append(notes, "bulkSize="+v+" is not supported and was ignored: ndbench sends one operation per key")
	}
	// NDBench ignores any other parameter; a user who passes a property here (readRateLimit)
	// expects it applied, so the answer says it was not. Names only: a value may be secret.
	var unknown []string
	for k := range q {
		switch k {
		case "loadPattern", "windowSize", "durationInSec", "bulkSize", "_": // "_": a client's cache buster
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		notes = append(notes, strings.Join(unknown, ", ")+" ignored: the start routes take loadPattern, windowSize, durationInSec and bulkSize; set properties with config/set")
	}
	return patch, notes, nil
}

// loadPatterns lists the pattern names start accepts, in NDBench's spelling where it has one.
func loadPatterns() []string {
	var out []string
	for _, p := range workload.Patterns() {
		if c, _ := workload.CanonicalPattern(p); c == p {
			out = append(out, ndbenchPatternName(p))
		}
	}
	return out
}

// ndbenchPatternName is NDBench's LoadPattern enum constant for a pattern (RANDOM for
// uniform), so the web UI's SLIDING_WINDOW test keeps working.
func ndbenchPatternName(p string) string {
	if p == workload.PatternUniform {
		return "RANDOM"
	}
	return strings.ToUpper(p)
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func withNotes(msg string, notes []string) string {
	if len(notes) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(notes, "; ")
}

// stop serves stop, stopReads and stopWrites. As in NDBench, stopping what is not running
// (or with no driver) succeeds.
func (a *api) stop(ops ...string) handlerFunc {
	what := "test"
	failMsg := "NdBench stop failed!"
	if len(ops) == 1 && ops[0] == opRead {
		what, failMsg = "reads", "NdBench stopreads failed!"
	} else if len(ops) == 1 {
		what, failMsg = "writes", "NdBench stopwrites failed!"
	}
	return func(w http.ResponseWriter, _ *http.Request, _ string) {
		if err := a.inst.Stop(ops...); err != nil && !errors.Is(err, node.ErrNotInitialized) {
			fail(w, failMsg, err)
			return
		}
		success(w, "NdBench "+what+" stopped!")
	}
}

// backfillPoll is how often startDataFill checks whether the backfill it started is done.
const backfillPoll = 50 * time.Millisecond

// startDataFill backfills and answers when the backfill ends, as NDBench does. If the
// client goes away first, the backfill goes on (getserverstatus shows it; stopDataFill
// ends it).
func (a *api) startDataFill(w http.ResponseWriter, r *http.Request, _ string) {
	if err := a.inst.StartBackfill(engine.BackfillOptions{}); err != nil {
		fail(w, "dataFill failed!", err)
		return
	}
	t := time.NewTicker(backfillPoll)
	defer t.Stop()
	for {
		b := a.inst.Status().Backfill
		if b == nil {
			writeResult(w, http.StatusConflict, false, "dataFill failed! the driver was shut down during the data fill")
			return
		}
		if !b.Running {
			writeBackfillResult(w, b)
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

func writeBackfillResult(w http.ResponseWriter, b *engine.BackfillStatus) {
	counts := fmt.Sprintf("%d of %d keys written", b.Written, b.Total)
	if b.Verified > 0 || b.Missing > 0 || b.Corrupt > 0 {
		counts += fmt.Sprintf(", verify: %d ok, %d missing, %d corrupt, %d wrong key, %d errors",
			b.Verified, b.Missing, b.Corrupt, b.WrongKey, b.VerifyErrors)
	}
	switch {
	case b.Phase == "stopped":
		writeResult(w, http.StatusConflict, false, "dataFill stopped before the end: "+counts)
	case b.Failed > 0 || b.Missing > 0 || b.Corrupt > 0 || b.WrongKey > 0 || b.VerifyErrors > 0:
		writeResult(w, http.StatusInternalServerError, false, fmt.Sprintf("dataFill failed! %d keys failed; %s", b.Failed, counts))
	default:
		success(w, "data fill done! "+counts)
	}
}

func (a *api) startDataFillAsync(w http.ResponseWriter, _ *http.Request, _ string) {
	if err := a.inst.StartBackfill(engine.BackfillOptions{}); err != nil {
		fail(w, "Async dataFill failed to start!", err)
		return
	}
	success(w, "Async data fill started !")
}

func (a *api) stopDataFill(w http.ResponseWriter, _ *http.Request, _ string) {
	if err := a.inst.StopBackfill(); err != nil && !errors.Is(err, node.ErrNotInitialized) {
		fail(w, "dataFill failed!", err)
		return
	}
	success(w, "data fill stop!")
}

// init connects the driver an NDBench client name (or an ndbench driver name) maps onto.
// Like NDBench, initializing the driver that is already connected succeeds.
func (a *api) init(w http.ResponseWriter, r *http.Request, client string) {
	name, err := resolveClient(client)
	if err != nil {
		fail(w, "Client initialization failed!", err)
		return
	}
	if st := a.inst.Status(); st.Initialized && st.Driver == name {
		success(w, "NdBench client initiated!")
		return
	}
	if err := a.inst.Init(r.Context(), name, nil); err != nil {
		if errors.Is(err, node.ErrAlreadyInitialized) {
			err = fmt.Errorf("driver %s is connected; call driver/shutdownclient first: %w", a.inst.Status().Driver, err)
		}
		fail(w, "Client initialization failed!", err)
		return
	}
	success(w, "NdBench client initiated!")
}

func (a *api) shutdownClient(w http.ResponseWriter, _ *http.Request, _ string) {
	if err := a.inst.Shutdown(); err != nil && !errors.Is(err, node.ErrNotInitialized) {
		fail(w, "NdBench shutdownClient failed!", err)
		return
	}
	success(w, "NdBench client uninitialized")
}

// readSingle reads one key. A missing key is a success with a null message, as NDBench
// answers when its client returns null.
func (a *api) readSingle(w http.ResponseWriter, r *http.Request, key string) {
	v, err := a.inst.Read(r.Context(), key)
	if errors.Is(err, driver.ErrNotFound) {
		writeJSON(w, http.StatusOK, Result{IsSuccess: true})
		return
	}
	if err != nil {
		fail(w, "NdBench readSingle failed!", err)
		return
	}
	success(w, string(v))
}

// writeSingle writes one key with a value shaped like the workload's (size, and the
// validation header when workload.validate is on, so a later validated read accepts it).
func (a *api) writeSingle(w http.ResponseWriter, r *http.Request, key string) {
	wl := a.inst.Config().Config.Workload
	vp := wl.ValueParams()
	vp.NumValues = 1
	vals, err := workload.NewValues(vp, rand.Uint64())
	if err != nil {
		fail(w, "NdBench writeSingle failed!", err)
		return
	}
	seed := rand.Uint64()
	v := vals.Pick(rand.New(rand.NewPCG(seed, seed>>1)))
	if wl.ValidateValues {
		v = workload.EncodeValue(nil, []byte(key), 0, v)
	}
	if err := a.inst.Write(r.Context(), key, v); err != nil {
		fail(w, "NdBench writeSingle failed!", err)
		return
	}
	success(w, "OK")
}

func (a *api) readStatus(w http.ResponseWriter, _ *http.Request, _ string) {
	if a.inst.Status().ReadsRunning {
		success(w, "Read process running")
		return
	}
	success(w, "No Read process is running")
}

func (a *api) writeStatus(w http.ResponseWriter, _ *http.Request, _ string) {
	if a.inst.Status().WritesRunning {
		success(w, "Writes process running")
		return
	}
	success(w, "No Write process is running")
}

// drivers lists what driver/init accepts: the registered drivers and the NDBench client
// names that map onto one of them, sorted (NDBench returns its plugin names).
func (a *api) drivers(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, http.StatusOK, clientDrivers())
}

func clientDrivers() []string {
	names := driver.Names()
	for c, d := range ndbenchClients() {
		if _, ok := driver.Lookup(d); ok {
			names = append(names, c)
		}
	}
	slices.Sort(names)
	return names
}

// ServerStatus is NDBench's getserverstatus body; its web UI reads RunningDriver ("NA"
// when none), the running flags, LoadPatterns and ConnectionInfo.
type ServerStatus struct {
	ClientDrivers           []string       `json:"ClientDrivers"`
	LoadPatterns            []string       `json:"LoadPatterns"`
	RunningDriver           string         `json:"RunningDriver"`
	RunningWriteLoadPattern string         `json:"RunningWriteLoadPattern"`
	RunningReadLoadPattern  string         `json:"RunningReadLoadPattern"`
	ConnectionInfo          string         `json:"ConnectionInfo"`
	IsReadsRunning          bool           `json:"IsReadsRunning"`
	IsWritesRunning         bool           `json:"IsWritesRunning"`
	IsBackfillRunning       bool           `json:"IsBackfillRunning"`
	Stats                   Stats          `json:"Stats"`
	DriverConfig            map[string]any `json:"DriverConfig"`
}

func (a *api) serverStatus(w http.ResponseWriter, _ *http.Request, _ string) {
	st := a.inst.Status()
	snap := a.inst.Config()
	s := ServerStatus{
		ClientDrivers:           clientDrivers(),
		LoadPatterns:            loadPatterns(),
		RunningDriver:           "NA",
		RunningWriteLoadPattern: "NA",
		RunningReadLoadPattern:  "NA",
		ConnectionInfo:          "NA",
		IsReadsRunning:          st.ReadsRunning,
		IsWritesRunning:         st.WritesRunning,
		IsBackfillRunning:       st.Backfill != nil && st.Backfill.Running,
		Stats:                   statsOf(a.inst.Collector()),
		DriverConfig:            configObject(snap, false),
	}
	if st.Initialized {
		s.RunningDriver = st.Driver
		s.ConnectionInfo = connectionInfo(st.ConnectionInfo)
	}
	gen := keyGeneratorName(snap.Config.Workload.Pattern)
	if st.ReadsRunning {
		s.RunningReadLoadPattern = gen
	}
	if st.WritesRunning {
		s.RunningWriteLoadPattern = gen
	}
	writeJSON(w, http.StatusOK, s)
}

// connectionInfo renders the driver's connection facts as NDBench's one string.
func connectionInfo(ci map[string]string) string {
	if len(ci) == 0 {
		return "NA"
	}
	parts := make([]string, 0, len(ci))
	for _, k := range slices.Sorted(maps.Keys(ci)) {
		parts = append(parts, k+"="+ci[k])
	}
	return strings.Join(parts, ", ")
}

// keyGeneratorName is the class name NDBench reports for a running load pattern; patterns
// NDBench does not have are reported by their LoadPattern-style name.
func keyGeneratorName(pattern string) string {
	switch pattern {
	case workload.PatternUniform:
		return "RandomStringKeyGenerator"
	case workload.PatternZipfian:
		return "ZipfianStringKeyGenerator"
	case workload.PatternSlidingWindow:
		return "SlidingWindowStringKeyGenerator"
	case workload.PatternSlidingWindowFlip:
		return "SlidingWindowFlipStringKeyGenerator"
	}
	return ndbenchPatternName(pattern)
}
