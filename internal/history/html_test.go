package history

import (
	"strings"
	"testing"
)

func TestWriteTrendHTML(t *testing.T) {
	xs := nightly(2, 30, 21, 0.2, 0.03)
	pts := make([]Point, len(xs))
	for i, x := range xs {
		pts[i] = Point{RunID: int64(100 + i), Started: t0.AddDate(0, 0, i), Value: x, Tags: map[string]string{"note": "<script>alert(1)</script>"}}
	}
	cps, err := EDivisive(xs, ChangePointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteTrendHTML(&b, TrendPage{Figure: Figure{"read", "p99"}, Points: pts, ChangePoints: cps, Filter: "store=redis"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"<svg", "<title>ndbench trend: read.p99</title>", "30 runs · store=redis",
		`stroke="` + regressionColor + `" stroke-dasharray="4 3"><title>change point at run 120: +`, // run 21 of the series
		`<td class="regression">regression &#43;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("a tag's value reached the page unescaped")
	}
	if got := strings.Count(page, "<circle"); got != 30 {
		t.Errorf("%d points drawn, want 30", got)
	}
}
