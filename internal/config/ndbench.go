package config

import (
	"sort"
	"strconv"
	"strings"
)

// NDBenchPrefix is the prefix of NDBench's own property names (Archaius namespace).
const NDBenchPrefix = "ndbench.config."

// ndbenchProperty is what one NDBench core property becomes here: a canonical key, or,
// when ndbench has no equivalent setting, the reason it is not supported.
type ndbenchProperty struct {
	key         string
	unsupported string
	seconds     bool // the NDBench value is a number of seconds; the key takes a duration
	// autotune is what the property is to `ndbench autotune` (NDBenchAutoTune), which
	// reads it from the file; other commands note that they ignore it.
	autotune string
}

// ndbenchProperties maps every core property of NDBench's IConfiguration.java (and
// NdBenchConstants.java) onto ndbench. Names are matched without regard to case.
//
// The properties ndbench has an option for come from the workload options' `ndbench` tags
// (declared once, with the option); this function adds those it has none for, with why.
func ndbenchProperties() map[string]ndbenchProperty {
	m := map[string]ndbenchProperty{
		// ndbench-cli's CliConfigs (prefix ndbench.config.cli).
		"cli.bulkSize":      {unsupported: "ndbench sends one operation per key; bulk operations are a driver capability"},
		"cli.timeoutMillis": {unsupported: "give the run length to `ndbench run`; workload.opTimeout bounds one operation"},
		"cli.clientName":    {unsupported: "select the store with driver.name (see `ndbench drivers`)"},

		"preloadKeys": {unsupported: "keys are generated on demand, never preloaded; " +
			"set workload.backfill=true to write every key before the load"},
		"backfillKeySlots": {unsupported: "backfill splits the keyspace across workload.backfillWorkers " +
			"on this node; cluster-wide backfill slots come with cluster mode"},
		"backfillStartKey": {unsupported: "backfill always covers the whole keyspace, keys 0 to workload.numKeys-1"},
		"useStaticData": {unsupported: "values always come from a pool of workload.numValues values; " +
			"set workload.numValues=1 for one static value"},
		"generateChecksum": {unsupported: "with workload.validate=true every value carries a header " +
			"that is checked on read (NDBench's validateChecksum maps onto it)"},
		"statsUpdateFreqSeconds":             {unsupported: statsUpdate},
		"statsUpdate.freq.seconds":           {unsupported: statsUpdate},
		"statsResetFreqSeconds":              {unsupported: statsReset},
		"statsReset.freq.seconds":            {unsupported: statsReset},
		"autoTuneEnabled":                    {autotune: AutoTuneEnabled},
		"autoTuneRampPeriodMillisecs":        {autotune: AutoTuneRampPeriod},
		"autoTuneIncrementIntervalMillisecs": {autotune: AutoTuneWindow},
		"autoTuneFinalRate":                  {autotune: AutoTuneMaxRate},
		"autoTuneFinalWriteRate":             {autotune: AutoTuneMaxRate},
		"autoTuneWriteFailureRatioThreshold": {autotune: AutoTuneWriteErrors},
	}
	for _, o := range workloadSchema() {
		if o.NDBench != "" {
			m[o.NDBench] = ndbenchProperty{key: "workload." + o.Name, seconds: o.NDBenchSeconds}
		}
	}
	return m
}

const (
	statsUpdate = "statistics are snapshotted every second into HDR histograms; the interval is fixed"
	statsReset  = "statistics are kept both per interval and cumulatively; reset them through the API"
)

// What NDBench's auto-tune properties are to `ndbench autotune` (NDBenchAutoTune's keys).
const (
	// AutoTuneEnabled: `ndbench autotune` is the switch; the value is not used.
	AutoTuneEnabled = "enabled"
	// AutoTuneRampPeriod: NDBench's time to ramp to the final rate; the search's length
	// follows from its steps, so it is not used.
	AutoTuneRampPeriod = "rampPeriod"
	// AutoTuneWindow (milliseconds): how long NDBench held each rate: the least window.
	AutoTuneWindow = "window"
	// AutoTuneMaxRate (ops/s): NDBench's final rate: the highest rate tried.
	AutoTuneMaxRate = "maxRate"
	// AutoTuneWriteErrors (ratio): NDBench's write failure threshold: the write class's
	// error-ratio bound.
	AutoTuneWriteErrors = "writeErrors"
)

// autoTuneFlags names the `ndbench autotune` flag each auto-tune property maps onto.
var autoTuneFlags = map[string]string{
	AutoTuneEnabled:     "the command itself",
	AutoTuneRampPeriod:  "nothing: the search ends by its tolerance, not by a ramp's length",
	AutoTuneWindow:      "--window",
	AutoTuneMaxRate:     "--max-rate",
	AutoTuneWriteErrors: "--sla write.errors",
}

// NDBenchAutoTune returns NDBench's auto-tune properties among values (a layer's raw
// keys and values, e.g. a .properties file's), keyed by what they are to `ndbench
// autotune` (AutoTuneWindow, ...). Names match without regard to case.
func NDBenchAutoTune(values map[string]string) map[string]string {
	props := ndbenchProperties()
	out := map[string]string{}
	for k, v := range values {
		rest, ok := cutPrefixFold(strings.TrimSpace(k), NDBenchPrefix)
		if !ok {
			continue
		}
		for n, p := range props {
			if p.autotune != "" && strings.EqualFold(n, rest) {
				out[p.autotune] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// ndbenchDriverPrefixes maps NDBench plugin property prefixes (ndbench.config.<prefix>.*)
// onto ndbench driver names. A prefix that is not listed maps onto a driver of the same
// name, so options of plugins without an ndbench driver are kept and reported as unused.
func ndbenchDriverPrefixes() map[string]string {
	return map[string]string{
		"cass":          "cassandra",
		"cassandra":     "cassandra",
		"es":            "elasticsearch",
		"elasticsearch": "elasticsearch",
		"dynamodb":      "dynamodb",
		"redis":         "redis",
		"dyno":          "redis", // Dynomite speaks the Redis protocol
		"dynomite":      "redis",
		"evcache":       "memcached", // EVCache is memcached underneath
		"memcached":     "memcached",
		"cockroachdb":   "postgres", // CockroachDB speaks the PostgreSQL protocol
		"postgres":      "postgres",
		"mongodb":       "mongodb",
		"mongo":         "mongodb",
	}
}

// mapNDBench maps an NDBench property (name with its "ndbench.config." prefix, and value)
// onto a canonical key and value. It returns the reason instead when the property has no
// equivalent, and ok false when the name is neither an NDBench core property nor a plugin
// property.
func mapNDBench(name, value string) (key, val, unsupported string, ok bool) {
	rest := name[len(NDBenchPrefix):]
	for n, p := range ndbenchProperties() {
		if strings.EqualFold(n, rest) {
			if p.seconds {
				if _, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
					value = strings.TrimSpace(value) + "s"
				}
			}
			if p.autotune != "" {
				// No key: the notice (autoTuneNotice) says where it applies.
				return "", value, "", true
			}
			return p.key, value, p.unsupported, true
		}
	}
	prefix, opt, dotted := strings.Cut(rest, ".")
	if !dotted || prefix == "" || opt == "" {
		return "", "", "", false
	}
	drv, known := ndbenchDriverPrefixes()[strings.ToLower(prefix)]
	if !known {
		drv = strings.ToLower(prefix)
	}
	return "drivers." + drv + "." + opt, value, "", true
}

// ndbenchCoreNames lists the NDBench core property names, sorted, for error messages.
func ndbenchCoreNames() []string {
	props := ndbenchProperties()
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// autoTuneNotice is the notice for an NDBench auto-tune property (its name as written):
// `ndbench autotune` reads it from the file; the configuration has no key for it.
func autoTuneNotice(name string) string {
	rest, _ := cutPrefixFold(name, NDBenchPrefix)
	for n, p := range ndbenchProperties() {
		if p.autotune != "" && strings.EqualFold(n, rest) {
			return name + " applies to `ndbench autotune` only (from a .properties file), as " + autoTuneFlags[p.autotune] + "; other commands ignore it"
		}
	}
	return ""
}
