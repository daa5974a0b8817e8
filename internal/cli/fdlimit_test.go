package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

func TestFDNeed(t *testing.T) {
	base := config.DefaultWorkload()
	cases := []struct {
		name     string
		edit     func(w *config.Workload)
		backfill bool
		need     int
		detail   string
	}{
		{"ten thousand fixed readers", func(w *config.Workload) {
			w.Readers, w.MaxReaders, w.ReadRate, w.Writers, w.WriteRate = 10000, 10000, 20000, 0, 0
		}, false, 10000 + fdReserve, "workers: read 10000"},
		{"readers and writers", func(w *config.Workload) {
			w.Readers, w.MaxReaders, w.ReadRate, w.Writers, w.MaxWriters, w.WriteRate = 100, 100, 0, 20, 20, 0
		}, false, 120 + fdReserve, "workers: read 100, write 20"},
		{"an elastic pool counts at its cap", func(w *config.Workload) {
			// auto: ceil(rate × opTimeout) = 5000, capped at max(4 × 50, 64) = 200.
			w.Readers, w.MaxReaders, w.ReadRate, w.OpTimeout, w.Writers = 50, 0, 1000, 5*time.Second, 0
		}, false, 200 + fdReserve, "workers: read 200"},
		{"a disabled class holds nothing", func(w *config.Workload) {
			w.Readers, w.MaxReaders, w.ReadRate, w.Writers, w.WriteEnabled = 30, 30, 0, 500, false
		}, false, 30 + fdReserve, "workers: read 30"},
		{"backfill's workers when they are more", func(w *config.Workload) {
			w.Readers, w.MaxReaders, w.ReadRate, w.Writers, w.BackfillWorkers = 8, 8, 0, 0, 400
		}, true, 400 + fdReserve, "backfill workers: 400"},
		{"backfill's workers only with backfill", func(w *config.Workload) {
			w.Readers, w.MaxReaders, w.ReadRate, w.Writers, w.BackfillWorkers = 8, 8, 0, 0, 400
		}, false, 8 + fdReserve, "workers: read 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := base
			c.edit(&w)
			need, detail := fdNeed(w, c.backfill, false)
			if need != c.need || detail != c.detail {
				t.Errorf("fdNeed = %d, %q; want %d, %q", need, detail, c.need, c.detail)
			}
		})
	}
}

// An in-process store (memory, pebble) gives its workers no connection: ten thousand
// workers on it need no more of the open-file limit than the process itself, and a low
// limit gets no note.
func TestFDNeedInProcessStore(t *testing.T) {
	w := config.DefaultWorkload()
	w.Readers, w.MaxReaders, w.ReadRate, w.Writers, w.WriteRate = 10000, 10000, 20000, 0, 0
	for _, name := range []string{"memory", "pebble"} {
		def, ok := driver.Lookup(name)
		if !ok {
			t.Fatalf("driver %s is not registered", name)
		}
		need, detail := fdNeed(w, false, def.InProcess)
		if need != fdReserve || !strings.Contains(detail, "in-process") {
			t.Errorf("%s: fdNeed = %d, %q; want %d, an in-process store", name, need, detail, fdReserve)
		}
		if note := fdLimitNote(need, detail, 1024, 1024); note != "" {
			t.Errorf("%s: note %q at a limit of 1024, want none", name, note)
		}
	}
	def, _ := driver.Lookup("redis")
	if need, _ := fdNeed(w, false, def.InProcess); need != 10000+fdReserve {
		t.Errorf("redis: fdNeed = %d, want %d (a connection per worker)", need, 10000+fdReserve)
	}
}

func TestFDLimitNote(t *testing.T) {
	cases := []struct {
		name       string
		need       int
		soft, hard uint64
		want       []string // substrings; none means no note
	}{
		{"within the limit", 10064, 20000, 20000, nil},
		{"exactly the limit", 1024, 1024, 1024, nil},
		{"over a low hard limit", 10064, 4096, 4096, []string{
			"up to 10064 connections", "workers: read 10000", "RLIMIT_NOFILE) is 4096 (hard limit 4096",
			"too many open files", "ulimit -Hn", "lower the workers"}},
		{"soft below hard (Go could not raise it)", 2000, 1024, 1048576, []string{"is 1024 (hard limit 1048576"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fdLimitNote(c.need, "workers: read 10000", c.soft, c.hard)
			if len(c.want) == 0 {
				if got != "" {
					t.Fatalf("note %q, want none", got)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q lacks %q", got, w)
				}
			}
		})
	}
}
