package config

import (
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// WorkersAllowed is the most workers a class may be set to that Validate accepts, the rest
// of the workload as it is: one more is rejected (unless it is the option's bound).
func TestWorkersAllowedIsWhatValidateAccepts(t *testing.T) {
	withClass := func(w Workload, class string, n int) Workload {
		switch class {
		case ClassRead:
			w.Readers = n
		case ClassWrite:
			w.Writers = n
		default:
			ops := map[string]OpClass{}
			for k, v := range w.Ops {
				ops[k] = v
			}
			c := ops[class]
			c.Workers = n
			ops[class] = c
			w.Ops = ops
		}
		return w
	}
	search := DefaultOpClass()
	tests := []struct {
		name  string
		edit  func(w *Workload)
		class string
		want  int // 0: only the property is checked
		under int // when not 0, got must be below it (another rule binds first)
	}{
		{name: "read, default writers", class: ClassRead, want: maxWorkers - 4},
		{name: "read, writes disabled still count their pool", edit: func(w *Workload) { w.WriteEnabled = false }, class: ClassRead, want: maxWorkers - 4},
		{name: "write beside 9000 readers", edit: func(w *Workload) { w.Readers = 9000 }, class: ClassWrite, want: 1000},
		{name: "read beside an elastic write pool", edit: func(w *Workload) { w.MaxWriters = 2000 }, class: ClassRead, want: 8000},
		{name: "op class", edit: func(w *Workload) { w.Ops = map[string]OpClass{"search": search} }, class: "search", want: maxWorkers - 8},
		{name: "memory budget", edit: func(w *Workload) {
			w.DataSize, w.MemoryBudget = 1<<20, 512*driver.Size(1<<20)
		}, class: ClassRead, under: maxWorkers - 4},
		{name: "unknown class: the option's bound", class: "nosuch", want: WorkersBound("nosuch")},
		{name: "invalid workload: the option's bound", edit: func(w *Workload) { w.HotKeys = 0 }, class: ClassRead, want: WorkersBound(ClassRead)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := DefaultWorkload()
			if tc.edit != nil {
				tc.edit(&w)
			}
			got := w.WorkersAllowed(tc.class)
			if tc.want != 0 && got != tc.want {
				t.Errorf("WorkersAllowed(%s) = %d, want %d", tc.class, got, tc.want)
			}
			if tc.under != 0 && got >= tc.under {
				t.Errorf("WorkersAllowed(%s) = %d, want below %d", tc.class, got, tc.under)
			}
			if _, ok := w.Class(tc.class); !ok || w.Validate() != nil {
				return
			}
			if err := withClass(w, tc.class, got).Validate(); err != nil {
				t.Errorf("WorkersAllowed(%s) = %d, which Validate rejects: %v", tc.class, got, err)
			}
			if got < WorkersBound(tc.class) {
				if withClass(w, tc.class, got+1).Validate() == nil {
					t.Errorf("WorkersAllowed(%s) = %d, but Validate accepts %d", tc.class, got, got+1)
				}
			}
		})
	}
	if b := WorkersBound(ClassRead); b != maxWorkers || WorkersBound(ClassWrite) != maxWorkers || WorkersBound("search") != maxWorkers {
		t.Errorf("WorkersBound = %d, want the tags' %d", b, maxWorkers)
	}
}
