package config

import "testing"

// TestPresetLayerRank: the preset layer sits above the defaults and below every other
// source, whatever order the layers are given in.
func TestPresetLayerRank(t *testing.T) {
	preset := Layer{Name: LayerPreset, Source: "preset p", Values: map[string]string{
		"driver.name": "fake-kv", "workload.readRate": "1", "workload.writeRate": "1", "workload.numKeys": "1", "workload.readers": "1", "workload.writers": "1"}}
	tests := []struct {
		over  Layer
		key   string
		value string
	}{
		{Layer{Name: LayerFile, Source: "file f", Values: map[string]string{"workload.readRate": "2"}}, "workload.readRate", "2"},
		{Layer{Name: LayerEnv, Source: "env", Values: map[string]string{"workload.writeRate": "3"}}, "workload.writeRate", "3"},
		{Layer{Name: LayerEtcd, Source: "etcd", Values: map[string]string{"workload.numKeys": "4"}}, "workload.numKeys", "4"},
		{Layer{Name: LayerRuntime, Source: "--set", Values: map[string]string{"workload.readers": "5"}}, "workload.readers", "5"},
	}
	for _, tc := range tests {
		t.Run(tc.over.Name, func(t *testing.T) {
			// The preset is given last: precedence is by name, not position.
			snap, err := Build([]Layer{DefaultsLayer(), tc.over, preset})
			if err != nil {
				t.Fatal(err)
			}
			if v, src, _ := snap.Value(tc.key); v != tc.value || src != tc.over.Source {
				t.Errorf("%s = %q from %q, want %q from %q", tc.key, v, src, tc.value, tc.over.Source)
			}
			if v, src, _ := snap.Value("workload.writers"); v != "1" || src != "preset p" {
				t.Errorf("workload.writers = %q from %q, want the preset's 1 over the default", v, src)
			}
		})
	}
}
