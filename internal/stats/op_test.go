package stats

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBuiltinSeries(t *testing.T) {
	c := NewCollector(Config{Shards: 1})
	for _, tt := range []struct {
		op   Op
		name string
	}{{OpRead, "read"}, {OpWrite, "write"}, {OpBackfill, "backfill"}} {
		if got := c.Name(tt.op); got != tt.name {
			t.Errorf("Name(%d) = %q, want %q", tt.op, got, tt.name)
		}
		if got, ok := c.Lookup(tt.name); !ok || got != tt.op {
			t.Errorf("Lookup(%q) = %v, %v; want %v, true", tt.name, got, ok, tt.op)
		}
	}
	if _, ok := c.Lookup("scan"); ok {
		t.Error(`Lookup("scan") found an unregistered series`)
	}
	if got := c.Name(Op(MaxSeries)); got != "" {
		t.Errorf("Name of an unknown Op = %q", got)
	}
}

func TestRegisterSeries(t *testing.T) {
	c := NewCollector(Config{Shards: 1})
	op, err := c.Register("search.byTitle")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Register("search.byTitle")
	if err != nil || again != op {
		t.Fatalf("registering twice gave %v, %v; want %v", again, err, op)
	}
	c.Recorder(op).Shard(0).Success(2*time.Millisecond, time.Millisecond)
	iv := c.Tick(time.Now())
	if o := iv.Op("search.byTitle"); o == nil || o.Successes != 1 {
		t.Fatalf("interval entry of the new series = %+v", o)
	}
	if got := c.Cumulative().Ops["search.byTitle"].Count; got != 1 {
		t.Errorf("cumulative count of the new series = %d, want 1", got)
	}
	if got := c.Names(); strings.Join(got, ",") != "read,write,backfill,search.byTitle" {
		t.Errorf("Names() = %v", got)
	}

	for _, bad := range []string{"", "9lives", "a b", "a,b", strings.Repeat("x", 65)} {
		if _, err := c.Register(bad); err == nil {
			t.Errorf("Register(%q) succeeded", bad)
		}
	}
	for i := len(c.Names()); i < MaxSeries; i++ {
		if _, err := c.Register("s" + strings.Repeat("x", i)); err != nil {
			t.Fatalf("series %d: %v", i, err)
		}
	}
	if _, err := c.Register("onetoomany"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at most %d", MaxSeries)) {
		t.Errorf("registering beyond MaxSeries: %v", err)
	}
}

// Series registered while workers record and the collector ticks: no race, nothing lost.
func TestRegisterWhileTicking(t *testing.T) {
	c := NewCollector(Config{Shards: 2})
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				c.Tick(time.Now())
				_ = c.Cumulative()
				_ = c.Latest()
			}
		}
	}()
	const n, per = 8, 500
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op, err := c.Register("class" + string(rune('a'+i)))
			if err != nil {
				t.Error(err)
				return
			}
			s := c.Recorder(op).Shard(i)
			for range per {
				s.Success(time.Millisecond, time.Millisecond)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	close(done)
	wg.Wait()
	c.Tick(time.Now())
	cum := c.Cumulative()
	for i := range n {
		if got := cum.Ops["class"+string(rune('a'+i))].Count; got != per {
			t.Errorf("class%c: %d ops, want %d", 'a'+i, got, per)
		}
	}
}

func TestOperationSeries(t *testing.T) {
	for _, tt := range []struct{ class, op, want string }{
		{"read", "read", "read.read"}, {"read", "scan", "read.scan"}, {"search", "byTitle", "search.byTitle"},
	} {
		if got := OperationSeries(tt.class, tt.op); got != tt.want {
			t.Errorf("OperationSeries(%q, %q) = %q, want %q", tt.class, tt.op, got, tt.want)
		}
	}
}

func TestValidationNames(t *testing.T) {
	want := map[Validation]string{Corrupt: "corrupt", WrongKey: "wrongKey", Stale: "stale", Lost: "lost"}
	if len(want) != NumValidations {
		t.Fatalf("test covers %d kinds, NumValidations = %d", len(want), NumValidations)
	}
	for _, v := range Validations {
		if got := v.String(); got != want[v] {
			t.Errorf("Validation(%d).String() = %q, want %q", v, got, want[v])
		}
	}
}

func TestReportOrder(t *testing.T) {
	ops := map[string]int{"backfill": 0, "write": 0, "search.byTitle": 0, "read": 0, "search": 0, "alpha": 0, "read.scan": 0}
	got := strings.Join(ReportOrder(ops), ",")
	if want := "read,read.scan,write,alpha,search,search.byTitle,backfill"; got != want {
		t.Errorf("ReportOrder = %s, want %s", got, want)
	}
}
