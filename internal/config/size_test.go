package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// manyKeys returns n distinct valid keys: options of a driver not in the build, kept and
// reported as notices, so a change of any size is valid apart from its size.
func manyKeys(n int, driverName, value string) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("drivers.%s.opt%d", driverName, i)] = value
	}
	return m
}

func TestChangeSizeLimit(t *testing.T) {
	st := newTestStore(t)
	over := manyKeys(MaxChangeKeys+1, "zzz", "1")
	sets := make([]string, 0, MaxChangeKeys+1)
	for k, v := range over {
		sets = append(sets, k+"="+v)
	}
	tests := []struct {
		name  string
		apply func() error
	}{
		{"PatchFrom (API, NDBench config/set)", func() error { _, err := st.PatchFrom(LayerRuntime, "api", over); return err }},
		{"Update", func() error { _, err := st.Update(LayerRuntime, over); return err }},
		{"Check (driver init)", func() error { return st.Check(LayerRuntime, over) }},
		{"SetLayer (etcd, watched file)", func() error { _, err := st.SetLayer(Layer{Name: LayerEtcd, Values: over}); return err }},
		{"Load: file", func() error {
			_, err := Load(Sources{Env: selectFake, File: &Layer{Name: LayerFile, Source: "file big.yaml", Values: over}})
			return err
		}},
		{"Load: --set", func() error { _, err := Load(Sources{Env: selectFake, Sets: sets}); return err }},
	}
	v0 := st.Current().Version
	for _, tt := range tests {
		err := tt.apply()
		if !errors.Is(err, ErrTooManyKeys) {
			t.Errorf("%s: err = %v, want ErrTooManyKeys", tt.name, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(MaxChangeKeys)) || !strings.Contains(msg, fmt.Sprint(MaxChangeKeys+1)) {
			t.Errorf("%s: error %q does not name the limit and the size", tt.name, msg)
		}
	}
	if v := st.Current().Version; v != v0 {
		t.Errorf("config version moved from %d to %d", v0, v)
	}
	// At the limit a change applies.
	if _, err := st.PatchFrom(LayerRuntime, "api", manyKeys(MaxChangeKeys, "zzz", "1")); err != nil {
		t.Errorf("change of %d keys: %v", MaxChangeKeys, err)
	}
}

// BenchmarkChangeKeys measures a change of n keys to a layer that already holds n keys
// written differently (drivers.ZZZ.optI replaces drivers.zzz.optI), which is what every
// Update, Patch and SetLayer does under the store's lock. ns/key must stay flat from 100
// to 10,000 keys (it grew linearly, so a change grew quadratically). The change-size
// limit is checked before this work, so the benchmark calls it directly.
func BenchmarkChangeKeys(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			base, err := Load(Sources{Env: selectFake})
			if err != nil {
				b.Fatal(err)
			}
			snap, err := base.with(LayerRuntime, "", manyKeys(n, "zzz", "1"), true)
			if err != nil {
				b.Fatal(err)
			}
			patch := manyKeys(n, "ZZZ", "2")
			for b.Loop() {
				next, err := snap.with(LayerRuntime, "api", patch, true)
				if err != nil {
					b.Fatal(err)
				}
				if got := len(next.layers[len(next.layers)-1].Values); got != n {
					b.Fatalf("runtime layer holds %d keys, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
