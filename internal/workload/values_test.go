package workload

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

func TestNewValuesRejectsBadParams(t *testing.T) {
	tests := []struct {
		name   string
		p      ValueParams
		fields []string
	}{
		{"no values", ValueParams{DataSize: 10}, []string{"workload.numValues"}},
		{"zero size", ValueParams{NumValues: 1}, []string{"workload.dataSize"}},
		{"too small for header", ValueParams{NumValues: 1, DataSize: HeaderSize - 1, Header: true}, []string{"workload.dataSize"}},
		{"too big", ValueParams{NumValues: 1, DataSize: MaxValueSize + 1}, []string{"workload.dataSize"}},
		{"variable min > max", ValueParams{NumValues: 1, Variable: true, DataSizeMin: 10, DataSizeMax: 5}, []string{"workload.dataSizeMin"}},
		{"variable max too big", ValueParams{NumValues: 1, Variable: true, DataSizeMin: 10, DataSizeMax: MaxValueSize + 1}, []string{"workload.dataSizeMax"}},
		{"fixed size unused with variable", ValueParams{NumValues: 1, Variable: true, DataSizeMin: 40, DataSizeMax: 50, Header: true}, nil},
		{"variable min too small", ValueParams{NumValues: 1, Variable: true, DataSizeMin: 8, DataSizeMax: 100, Header: true}, []string{"workload.dataSizeMin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewValues(tt.p, 1)
			if tt.fields == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe driver.FieldErrors
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want driver.FieldErrors", err, err)
			}
			var got []string
			for _, e := range fe {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("fields = %v, want %v (%v)", got, tt.fields, err)
			}
		})
	}
}

func mustValues(t testing.TB, p ValueParams, seed uint64) *Values {
	t.Helper()
	v, err := NewValues(p, seed)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func isAlphanumeric(b []byte) bool {
	for _, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func TestValuesFixedSize(t *testing.T) {
	v := mustValues(t, ValueParams{NumValues: 50, DataSize: 128}, 1)
	r := newRand(1)
	distinct := map[string]bool{}
	for range 2000 {
		p := v.Pick(r)
		if len(p) != 128 || !isAlphanumeric(p) {
			t.Fatalf("payload %q: want 128 alphanumeric bytes", p)
		}
		distinct[string(p)] = true
	}
	if len(distinct) != 50 {
		t.Errorf("%d distinct payloads picked, want all 50", len(distinct))
	}
}

func TestValuesVariableSize(t *testing.T) {
	v := mustValues(t, ValueParams{NumValues: 500, Variable: true, DataSizeMin: 40, DataSizeMax: 50, Header: true}, 2)
	r := newRand(2)
	seen := map[int]bool{}
	for range 5000 {
		n := len(v.Pick(r))
		if n < 40 || n > 50 {
			t.Fatalf("payload of %d bytes, want [40, 50]", n)
		}
		seen[n] = true
	}
	if len(seen) != 11 {
		t.Errorf("sizes seen %v, want every size in [40, 50]", seen)
	}
}

func TestValuesSeedAndRefresh(t *testing.T) {
	p := ValueParams{NumValues: 3, DataSize: 64}
	a, b := mustValues(t, p, 7), mustValues(t, p, 7)
	if !bytes.Equal(a.Pick(newRand(1)), b.Pick(newRand(1))) {
		t.Errorf("same seed built different pools")
	}
	before := a.Pick(newRand(1))
	a.Refresh(8)
	after := a.Pick(newRand(1))
	if bytes.Equal(before, after) {
		t.Errorf("Refresh with a new seed kept the payload %q", before)
	}
	if !isAlphanumeric(before) {
		t.Errorf("a payload from the old pool changed after Refresh: %q", before)
	}
}

func TestValuesRefreshWhileReading(t *testing.T) {
	v := mustValues(t, ValueParams{NumValues: 10, Variable: true, DataSizeMin: 1, DataSizeMax: 100}, 1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			r := newRand(uint64(w))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if p := v.Pick(r); len(p) < 1 || len(p) > 100 || !isAlphanumeric(p) {
					t.Errorf("half-built payload %q", p)
					return
				}
			}
		})
	}
	for s := range uint64(50) {
		v.Refresh(s)
	}
	close(stop)
	wg.Wait()
}

func TestPickDoesNotAllocate(t *testing.T) {
	v := mustValues(t, ValueParams{NumValues: 100, DataSize: 64}, 1)
	r := newRand(1)
	if a := testing.AllocsPerRun(1000, func() { v.Pick(r) }); a != 0 {
		t.Errorf("Pick: %v allocs", a)
	}
}

func BenchmarkValuesPick(b *testing.B) {
	v := mustValues(b, ValueParams{NumValues: 1000, DataSize: 128}, 1)
	r := newRand(1)
	b.ReportAllocs()
	for b.Loop() {
		v.Pick(r)
	}
}
