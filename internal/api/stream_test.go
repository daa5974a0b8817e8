package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestStreamCumulative checks the stream's cumulative=1 events, which the UI's numbers
// table and failures panel follow instead of polling GET /api/v1/stats: one when the
// stream opens, one after each interval, with totals that grow and the failure messages.
func TestStreamCumulative(t *testing.T) {
	e := newEnv(t, "workload.readRate=500", "workload.writeEnabled=false")
	e.initMemory(map[string]string{"errorRatio": "0.2", "errorClass": "timeout"})
	e.must(200, "POST", "/api/v1/load/start", nil, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc := e.stream(t, ctx, "?cumulative=1")
	var got []CumulativeEvent
	intervals, event := 0, ""
	for len(got) < 3 && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "interval":
			intervals++
		case "cumulative":
			if len(got) == 0 && intervals > 0 {
				t.Errorf("the first cumulative event came after %d intervals, want it when the stream opens", intervals)
			}
			var ce CumulativeEvent
			if err := json.Unmarshal([]byte(data), &ce); err != nil {
				t.Fatalf("cumulative event: %v: %.200s", err, data)
			}
			got = append(got, ce)
		default:
			t.Errorf("data under event %q", event)
		}
	}
	if len(got) < 3 {
		t.Fatalf("%d cumulative events before the stream ended (%v)", len(got), sc.Err())
	}
	if intervals < 2 {
		t.Errorf("%d interval events beside 3 cumulative ones, want one before each after the first", intervals)
	}
	first, last := got[0].Cumulative.Ops["read"], got[len(got)-1].Cumulative.Ops["read"]
	if last.Attempted <= first.Attempted || last.Errors == 0 || last.Failures["timeout"] != last.Errors {
		t.Errorf("read totals from %+v to %+v: want growing attempts and timeouts", first, last)
	}
	msgs := got[len(got)-1].Errors["read"]
	if len(msgs) == 0 || !strings.Contains(msgs[0].Message, "injected failure") || msgs[0].Class != "timeout" || msgs[0].Count == 0 {
		t.Errorf("read failure messages %+v, want the injected timeout with a count", msgs)
	}
}
