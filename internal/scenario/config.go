package scenario

import (
	"fmt"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/presets"
	"github.com/ndbench/ndbench/internal/config/source"
)

// loadConfig builds the scenario's configuration: defaults, the preset, the config file,
// the environment, the file's config section, then --set.
func loadConfig(path string, f *File, env map[string]string, opts Options) (*config.Snapshot, error) {
	layers := []config.Layer{config.DefaultsLayer()}
	var errs driver.FieldErrors
	if f.Workload != "" {
		l, fes, err := presets.Load(relative(path, f.Workload))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: workload %s: %w", path, f.Workload, err)
		}
		layers, errs = append(layers, l), append(errs, fes...)
	}
	if f.ConfigFile != "" {
		l, fes, err := source.FileLayer(relative(path, f.ConfigFile))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: configFile: %w", path, err)
		}
		layers, errs = append(layers, l), append(errs, fes...)
	}
	el, fes := config.EnvLayer(opts.Env)
	layers, errs = append(layers, el), append(errs, fes...)
	if len(f.Config) > 0 {
		expanded, err := expandAll(f.Config, env)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: config: %w", path, err)
		}
		b, err := yaml.Marshal(expanded)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: config: %w", path, err)
		}
		// A layer of its own name ranks between etcd and the runtime layer: above the
		// preset, the config file and the environment, below --set.
		l := config.Layer{Name: "scenario", Source: "scenario " + path}
		l, fes, err := source.ParseLayer(l, "scenario config", "config.yaml", b)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", path, err)
		}
		layers, errs = append(layers, l), append(errs, fes...)
	}
	sets, fes := config.SetsLayer(opts.Sets)
	layers, errs = append(layers, sets), append(errs, fes...)
	snap, err := config.Build(layers)
	if err != nil {
		fes, ok := driver.AsFieldErrors(err)
		if !ok {
			return nil, err
		}
		errs = append(errs, fes...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	snap.Version = 1
	return snap, nil
}

func relative(scenario, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if _, ok := presets.Lookup(p); ok {
		return p
	}
	return filepath.Join(filepath.Dir(scenario), p)
}
