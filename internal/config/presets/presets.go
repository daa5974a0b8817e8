// Package presets holds ndbench's workload presets: named configurations (NDBench's own
// defaults, YCSB's core workloads A-F) that --workload applies as a layer of their own,
// config.LayerPreset, just above the built-in defaults, so a config file, NDBENCH_*
// variables and --set still override every value. A preset is an ordinary config file
// (same keys, YAML or NDBench .properties): the built-in ones are embedded YAML files in
// this directory, and --workload FILE takes a user's file the same way.
//
// It is a package of its own, rather than part of package config, because reading a
// preset needs the YAML parser of package config/source, which config must not link.
package presets

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
)

//go:embed *.yaml
var builtin embed.FS

// descriptionPrefix starts the first line of every built-in preset: the one line
// `ndbench workloads` shows. A comment, so the file stays a plain config file.
const descriptionPrefix = "# description:"

// Preset is one built-in preset.
type Preset struct {
	Name        string // what --workload takes: "ycsb-a"
	Description string // one line, from the file's first comment
	Text        []byte // the YAML file as embedded, comments included
}

// All returns the built-in presets, sorted by name.
func All() []Preset {
	entries, err := fs.ReadDir(builtin, ".")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	out := make([]Preset, 0, len(entries))
	for _, e := range entries {
		text, err := builtin.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		first, _, _ := strings.Cut(string(text), "\n")
		desc, _ := strings.CutPrefix(first, descriptionPrefix)
		out = append(out, Preset{Name: strings.TrimSuffix(e.Name(), path.Ext(e.Name())), Description: strings.TrimSpace(desc), Text: text})
	}
	slices.SortFunc(out, func(a, b Preset) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Names returns the names of the built-in presets, sorted.
func Names() []string {
	var names []string
	for _, p := range All() {
		names = append(names, p.Name)
	}
	return names
}

// Lookup returns the built-in preset called name.
func Lookup(name string) (Preset, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// Layer returns the preset's values as the preset layer, labelled "preset <name>" in
// every source column.
func (p Preset) Layer() (config.Layer, error) {
	l := config.Layer{Name: config.LayerPreset, Source: "preset " + p.Name}
	l, fes, err := source.ParseLayer(l, "preset", p.Name+".yaml", p.Text)
	if err == nil && len(fes) > 0 {
		err = fes
	}
	return l, err
}

// Keys returns the keys the preset sets, sorted.
func (p Preset) Keys() ([]string, error) {
	l, err := p.Layer()
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(l.Values))
	for k := range l.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// ErrUnknown is wrapped by the error for a name that is neither a built-in preset nor an
// existing file.
var ErrUnknown = errors.New("no such preset")

// Load returns the preset layer for nameOrPath: a built-in preset by name, else the
// config file at that path (YAML, or NDBench .properties), whose values land in the preset
// layer labelled "preset file <path>". A built-in name wins over a file of the same name
// in the working directory; write ./ycsb-a to mean the file. The field errors are keys
// the file's reader rejected (as source.FileLayer's), to be reported with every other bad
// key; err is a preset that cannot be read at all.
func Load(nameOrPath string) (config.Layer, driver.FieldErrors, error) {
	if p, ok := Lookup(nameOrPath); ok {
		l, err := p.Layer()
		if err != nil {
			// A built-in preset is checked by the tests; should one break, say so.
			return l, nil, fmt.Errorf("built-in preset %s: %w", p.Name, err)
		}
		return l, nil, nil
	}
	available := "the built-in presets are " + strings.Join(Names(), ", ") + " (ndbench workloads lists them)"
	data, err := os.ReadFile(nameOrPath)
	switch {
	case errors.Is(err, fs.ErrNotExist) && looksLikePath(nameOrPath):
		return config.Layer{}, nil, fmt.Errorf("%w: preset file %s does not exist (a path must name an existing YAML or .properties file); %s",
			ErrUnknown, nameOrPath, available)
	case errors.Is(err, fs.ErrNotExist):
		return config.Layer{}, nil, fmt.Errorf("%w: %q is not a built-in preset, nor an existing file; %s", ErrUnknown, nameOrPath, available)
	case err != nil:
		return config.Layer{}, nil, fmt.Errorf("read preset file %s: %w", nameOrPath, err)
	}
	l := config.Layer{Name: config.LayerPreset, Source: "preset file " + nameOrPath}
	return source.ParseLayer(l, "preset file", nameOrPath, data)
}

// looksLikePath reports whether s was meant as a file rather than a preset name: it has a
// directory part or a config file's extension.
func looksLikePath(s string) bool {
	if strings.ContainsAny(s, `/\`) {
		return true
	}
	switch strings.ToLower(filepath.Ext(s)) {
	case ".yaml", ".yml", ".properties":
		return true
	}
	return false
}
