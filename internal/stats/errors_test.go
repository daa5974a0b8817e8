package stats

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func TestFailureMessages(t *testing.T) {
	type failure struct {
		shard int
		class driver.Class
		msg   string
		n     int
	}
	oom := "OOM command not allowed when used memory > 'maxmemory'."
	tests := []struct {
		name string
		in   []failure
		want []ErrorMessage // Class, Message, Count only
	}{
		{name: "one message counted across shards",
			in:   []failure{{0, driver.ClassRejected, oom, 1000}, {3, driver.ClassRejected, oom, 997}},
			want: []ErrorMessage{{Class: "rejected", Message: oom, Count: 1997}}},
		{name: "classes kept apart",
			in: []failure{{0, driver.ClassTimeout, "i/o timeout", 2}, {0, driver.ClassRejected, oom, 1}},
			want: []ErrorMessage{{Class: "timeout", Message: "i/o timeout", Count: 2},
				{Class: "rejected", Message: oom, Count: 1}}},
		{name: "messages differing in numbers are one",
			in:   []failure{{0, driver.ClassOther, "key 1234 at offset 7 of 64: bad", 1}, {0, driver.ClassOther, "key 99 at offset 12 of 64: bad", 2}},
			want: []ErrorMessage{{Class: "other", Message: "key N at offset N of 64: bad", Count: 3}}},
		{name: "passwords masked",
			in:   []failure{{0, driver.ClassUnavailable, "dial redis://app:hunter2@db:6379: refused", 1}},
			want: []ErrorMessage{{Class: "unavailable", Message: "dial redis://app:" + driver.CredentialMask + "@db:6379: refused", Count: 1}}},
		{name: "long messages cut",
			in:   []failure{{0, driver.ClassOther, strings.Repeat("é", 150), 1}},
			want: []ErrorMessage{{Class: "other", Message: strings.Repeat("é", MaxErrorMessageBytes/2), Count: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCollector(Config{Shards: 4})
			r := c.Recorder(OpRead)
			for _, f := range tt.in {
				for range f.n {
					r.Shard(f.shard).FailureErr(f.class, errors.New(f.msg))
				}
			}
			got := c.Errors()["read"]
			if len(got) != len(tt.want) {
				t.Fatalf("got %d messages %+v, want %+v", len(got), got, tt.want)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Class != w.Class || g.Message != w.Message || g.Count != w.Count {
					t.Errorf("message %d = %s %q ×%d, want %s %q ×%d", i, g.Class, g.Message, g.Count, w.Class, w.Message, w.Count)
				}
				if g.First.IsZero() || g.Last.Before(g.First) {
					t.Errorf("message %d: first %v, last %v", i, g.First, g.Last)
				}
			}
			if n := c.Cumulative().Ops["read"].Errors; n != 0 {
				t.Errorf("counted before a tick: %d", n)
			}
			c.Tick(time.Now())
			var total int64
			for _, f := range tt.in {
				total += int64(f.n)
			}
			if n := c.Cumulative().Ops["read"].Errors; n != total {
				t.Errorf("errors = %d, want %d", n, total)
			}
			c.Reset()
			if e := c.Errors(); len(e) != 0 {
				t.Errorf("after Reset: %v", e)
			}
		})
	}
}

func TestFailureMessagesBounded(t *testing.T) {
	c := NewCollector(Config{Shards: 2})
	s := c.Recorder(OpWrite).Shard(0)
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
		"india", "juliet", "kilo", "lima", "mike"}
	for _, w := range words {
		s.FailureErr(driver.ClassOther, errors.New("failed: "+w))
		time.Sleep(time.Millisecond) // distinct last-seen times
	}
	got := c.Errors()["write"]
	if len(got) != MaxErrorMessages {
		t.Fatalf("kept %d messages, want %d", len(got), MaxErrorMessages)
	}
	if got[0].Message != "failed: mike" || got[len(got)-1].Message != "failed: delta" {
		t.Errorf("kept %q ... %q, want the most recent first (mike ... delta)", got[0].Message, got[len(got)-1].Message)
	}
}

// BenchmarkShardFailureErr is a store failing every operation with a message that
// repeats, on one shard and with every worker on its own shard.
func BenchmarkShardFailureErr(b *testing.B) {
	err := fmt.Errorf("write: %w", errors.New("OOM command not allowed when used memory > 'maxmemory'."))
	b.Run("one", func(b *testing.B) {
		s := newRecorder(OpWrite, 1).Shard(0)
		b.ReportAllocs()
		for b.Loop() {
			s.FailureErr(driver.ClassRejected, err)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		r := newRecorder(OpWrite, DefaultShards())
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			s := r.Shard(int(next.Add(1)))
			for pb.Next() {
				s.FailureErr(driver.ClassRejected, err)
			}
		})
	})
	b.Run("varying numbers", func(b *testing.B) {
		s := newRecorder(OpWrite, 1).Shard(0)
		errs := make([]error, 1024)
		for i := range errs {
			errs[i] = fmt.Errorf("key %d: value too large", i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.FailureErr(driver.ClassRejected, errs[i&1023])
		}
	})
}

func BenchmarkShardFailure(b *testing.B) {
	s := newRecorder(OpWrite, 1).Shard(0)
	b.ReportAllocs()
	for b.Loop() {
		s.Failure(driver.ClassRejected)
	}
}

// A credential that straddles the cut is masked whole, also once digits were merged.
func TestFailureMessageMaskedBeforeCut(t *testing.T) {
	c := NewCollector(Config{Shards: 1})
	s := c.Recorder(OpRead).Shard(0)
	pad := strings.Repeat("x", MaxErrorMessageBytes-33) // the cut falls inside the password
	for i := range 3 {
		s.FailureErr(driver.ClassUnavailable, fmt.Errorf("op %d %s dial redis://app:hunter2hunter2@db:6379", i, pad))
	}
	got := c.Errors()["read"]
	if len(got) != 1 || got[0].Count != 3 || strings.Contains(got[0].Message, "hunter") || !strings.HasPrefix(got[0].Message, "op N ") {
		t.Fatalf("messages = %+v", got)
	}
}
