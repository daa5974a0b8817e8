package config

import (
	"maps"
	"strings"
	"testing"
)

// writeProperties serializes m the way java.util.Properties.store escapes: every
// character ParseProperties treats specially is escaped, so any map survives a write and
// a read.
func writeProperties(m map[string]string) string {
	esc := func(s string, key bool) string {
		var b strings.Builder
		// Byte by byte: the specials are ASCII, and a value may hold bytes that are not
		// UTF-8, which the parser keeps as they are.
		for i := 0; i < len(s); i++ {
			r := s[i]
			switch {
			case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!':
				b.WriteString(`\` + string(rune(r)))
			case r == ' ' && (key || i == 0):
				b.WriteString(`\ `)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\f':
				b.WriteString(`\f`)
			default:
				b.WriteByte(r)
			}
		}
		return b.String()
	}
	var b strings.Builder
	for k, v := range m {
		b.WriteString(esc(k, true) + "=" + esc(v, false) + "\n")
	}
	return b.String()
}

// FuzzProperties feeds NDBench .properties text (a file named on the command line, or a
// preset) to the parser. It returns an error or a map; every key it reports has the line
// its definition starts on, within the text; and writing the map back and reading it
// again gives the same map.
func FuzzProperties(f *testing.F) {
	for _, s := range []string{
		"ndbench.config.readRateLimit=100\nndbench.config.numKeys: 1000\n",
		"# comment\n! other\nkey value with \\\n    continuation\n",
		"a\\=b=c\\:d\\u0041\\t\n",
		"k=\\u00e9\\uD83D\\uDE00\r\nk2\f=v\r",
		"ndbench.config.numBackfill=20000000 # Backfill keys\n",
		"bad=\\u12\n",
		"trailing\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, lines, err := ParsePropertiesLines(text)
		if err != nil {
			if m != nil {
				t.Fatalf("error %v with a map", err)
			}
			return
		}
		natural := len(splitNaturalLines(text))
		for k := range m {
			if l, ok := lines[k]; !ok || l < 1 || l > natural {
				t.Fatalf("key %q on line %d of %d", k, l, natural)
			}
		}
		again, err := ParseProperties(writeProperties(m))
		if err != nil {
			t.Fatalf("parsing what was written: %v\n%q", err, writeProperties(m))
		}
		if !maps.Equal(m, again) {
			t.Fatalf("parse → write → parse changed the map:\n%q\n%q\nwritten %q", m, again, writeProperties(m))
		}
	})
}

// FuzzConfigPatch feeds the config layer what an API caller sends as a change: any keys
// and values, into the runtime layer. A change is applied whole or not at all: on an
// error the store's snapshot is the one it had, and an accepted change, applied again,
// is accepted and changes nothing.
func FuzzConfigPatch(f *testing.F) {
	for _, kv := range [][4]string{
		{"workload.readRate", "100", "workload.writeRate", "5"},
		{"workload.numReaders", "4", "workload.pattern", "zipfian"},
		{"ndbench.config.readRateLimit", "20", "drivers.fake-kv.latency", "1ms"},
		{"workload.ops.scan.rate", "10", "workload.ops.scan.mix", "scan:1"},
		{"workload.readRate", "-1", "workload.keyLength", "1e400"},
		{"driver.name", "fake-other", "drivers.fake-kv.password", "hunter2"},
	} {
		f.Add(kv[0], kv[1], kv[2], kv[3])
	}
	base, err := Load(Sources{Sets: []string{"driver.name=fake-kv"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		st := NewStore(base)
		before := st.Current()
		values := map[string]string{k1: v1, k2: v2}
		snap, err := st.Patch(LayerRuntime, values)
		if err != nil {
			if st.Current() != before {
				t.Fatalf("rejected (%v) yet the snapshot changed", err)
			}
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if snap != st.Current() || snap.Version <= before.Version {
			t.Fatalf("accepted: snapshot version %d after %d, current is the returned one: %v", snap.Version, before.Version, snap == st.Current())
		}
		again, err := st.Patch(LayerRuntime, values)
		if err != nil {
			t.Fatalf("the same change, applied again: %v", err)
		}
		if len(again.Entries) != len(snap.Entries) {
			t.Fatalf("the same change, applied again: %d entries, was %d", len(again.Entries), len(snap.Entries))
		}
		for i := range snap.Entries {
			if again.Entries[i] != snap.Entries[i] {
				t.Fatalf("the same change, applied again: %+v, was %+v", again.Entries[i], snap.Entries[i])
			}
		}
	})
}
