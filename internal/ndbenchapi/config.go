package ndbenchapi

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// listName returns the name config/list uses for a workload option: NDBench's
// IConfiguration name when NDBench has the setting (its `ndbench` tag), so NDBench's UI and
// scripts find the names they know; the ndbench option name otherwise.
func listName(o driver.Option, _ []driver.Option) string {
	if o.NDBench != "" && !strings.Contains(o.NDBench, ".") {
		return o.NDBench
	}
	return o.Name
}

// configObject renders the workload configuration as NDBench's config/list does: one flat
// object of typed values (numbers, booleans, strings), which NDBench's UI turns into
// editors by JSON type. Every key it lists is accepted back by config/set. With live, only
// the options that change a running load (NDBench's tunables) are listed. Driver options
// are not listed (NDBench lists none), so no secret can appear here.
func configObject(snap *config.Snapshot, live bool) map[string]any {
	schema := config.WorkloadSchema()
	vals := driver.Values(&snap.Config.Workload, false)
	out := make(map[string]any, len(schema))
	for _, o := range schema {
		if live && !o.Live {
			continue
		}
		// Shown as everywhere else (a key prefix could be a URL with a password).
		out[listName(o, schema)] = typed(o.Type, config.Redact("workload."+o.Name, vals[o.Name]))
	}
	return out
}

// typed converts an option's text value to the JSON type NDBench would send.
func typed(typ, v string) any {
	switch typ {
	case "int":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	case "uint":
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return n
		}
	case "float":
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	case "bool":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

func (a *api) configList(live bool) handlerFunc {
	return func(w http.ResponseWriter, _ *http.Request, _ string) {
		writeJSON(w, http.StatusOK, configObject(a.inst.Config(), live))
	}
}

// maxBody bounds a config/set body; a property map is a few hundred bytes.
const maxBody = 1 << 20

// configSet serves config/set and config/tunable/set. NDBench takes a JSON object of
// property names to values; query and form parameters are accepted too. NDBench's
// tunable/set also takes any property, so both routes behave the same: the change is
// validated as a whole and applied to the running load at once, or rejected entirely.
func (a *api) configSet(okMsg string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ string) {
		props, err := readProps(r)
		if err != nil {
			fail(w, "config/set failed!", err)
			return
		}
		patch := make(map[string]string, len(props))
		written := make([]string, 0, len(props))
		asGiven := make(map[string]string, len(props)) // config key -> the name the caller used
		for k, v := range props {
			k = strings.TrimSpace(k)
			if k == "" || v == "" {
				continue // NDBench skips empty names and values
			}
			key := configKey(k)
			patch[key] = v
			written = append(written, key)
			asGiven[key] = k
		}
		if len(patch) == 0 {
			fail(w, "config/set failed!", badParam("no properties given: send a JSON object {\"name\": value} or name=value parameters"))
			return
		}
		res, err := a.inst.Patch(patch)
		if err != nil {
			fail(w, "config/set failed!", namedAsGiven(err, asGiven))
			return
		}
		// A notice starts with the key it is about; look each up once (pairing every
		// notice with every key grew quadratically with the change).
		mine := make(map[string]bool, len(written))
		for _, k := range written {
			mine[k] = true
		}
		var notes []string
		for _, n := range res.Snapshot.Notices {
			if k, _, ok := strings.Cut(n, " "); ok && mine[k] {
				notes = append(notes, n)
			}
		}
		if len(res.Pending) > 0 {
			notes = append(notes, "applied at the next driver init: "+strings.Join(res.Pending, ", "))
		}
		success(w, withNotes(okMsg, notes))
	}
}

// namedAsGiven rewrites field errors to name each property as the caller wrote it
// ("numReaders (workload.readers)"), so an NDBench user recognises the key. The source is
// left out: every value of this request came from it.
func namedAsGiven(err error, asGiven map[string]string) error {
	fes, ok := driver.AsFieldErrors(err)
	if !ok {
		return err
	}
	out := make(driver.FieldErrors, len(fes))
	for i, fe := range fes {
		c := *fe
		c.Source = ""
		if given, ok := asGiven[fe.Field]; ok && given != fe.Field {
			c.Field = given + " (" + fe.Field + ")"
		}
		out[i] = &c
	}
	return out
}

// configKey maps a property name as NDBench users write it onto a key config.Store
// accepts: ndbench keys (workload.*, driver.name, drivers.*) and ndbench.config.* names
// pass through; a workload option or its NDBench alias (numReaders, readRateLimit) becomes
// workload.<option>; anything else is taken as NDBench does, as ndbench.config.<name>,
// which maps plugin properties (cass.host) onto driver options and rejects unknown names.
func configKey(k string) string {
	lower := strings.ToLower(k)
	for _, p := range []string{"workload.", "driver.", "drivers.", strings.ToLower(config.NDBenchPrefix)} {
		if strings.HasPrefix(lower, p) {
			return k
		}
	}
	if lower == "driver" {
		return "driver.name"
	}
	if c, ok := driver.Canonical(config.WorkloadSchema(), k); ok {
		return "workload." + c
	}
	return config.NDBenchPrefix + k
}

// readProps collects the properties of a set request: a JSON object body (values of any
// scalar type), form parameters, and query parameters.
func readProps(r *http.Request) (map[string]string, error) {
	props := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Body != nil && (ct == "application/json" || ct == "" && r.Method != http.MethodGet) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			return nil, badParam("reading the body: " + err.Error())
		}
		if len(body) > maxBody {
			return nil, badParam(fmt.Sprintf("body larger than %d bytes", maxBody))
		}
		if strings.TrimSpace(string(body)) != "" {
			if err := decodeProps(body, props); err != nil {
				return nil, err
			}
		}
	}
	if err := r.ParseForm(); err != nil {
		return nil, badParam(err.Error())
	}
	for k, v := range r.Form {
		if len(v) > 0 {
			props[k] = v[len(v)-1]
		}
	}
	return props, nil
}

// decodeProps reads a JSON object whose values are strings, numbers, booleans or null
// (NDBench's UI sends numbers and booleans; Jackson turns them into strings).
func decodeProps(body []byte, props map[string]string) error {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return badParam("the body must be a JSON object of property names to values: " + err.Error())
	}
	var bad []string
	for k, v := range m {
		switch x := v.(type) {
		case nil:
		case string:
			props[k] = x
		case json.Number:
			props[k] = x.String()
		case bool:
			props[k] = strconv.FormatBool(x)
		default:
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return badParam("properties must have string, number or boolean values; not: " + strings.Join(bad, ", "))
	}
	return nil
}
