package history

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// TrendPage is what WriteTrendHTML draws: a figure's trend and its change points.
type TrendPage struct {
	Figure Figure
	Points []Point
	// ChangePoints are EDivisive's answer over Points' values.
	ChangePoints []ChangePoint
	// Filter describes the runs selected, for the title ("store=redis-7.2, last 30").
	Filter string
}

// chart geometry, in SVG user units; the SVG scales to the page's width.
const (
	chartW, chartH             = 960.0, 360.0
	padL, padR, padT, padB     = 70.0, 20.0, 20.0, 50.0
	plotW, plotH               = chartW - padL - padR, chartH - padT - padB
	regressionColor, okColor   = "#c62828", "#2e7d32"
	lineColor, gridColor, text = "#1565c0", "#e0e0e0", "#424242"
)

var trendTemplate = template.Must(template.New("trend").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ndbench trend: {{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:1rem;color:#212121}
svg{width:100%;height:auto;max-width:960px}
table{border-collapse:collapse;font-size:.9rem}td,th{padding:.2rem .6rem;border-bottom:1px solid #eee;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.regression{color:` + regressionColor + `}.improvement{color:` + okColor + `}
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{.Subtitle}}</p>
{{.SVG}}
<table><thead><tr><th>run</th><th>started (UTC)</th><th>{{.Figure}} ({{.Unit}})</th><th>change</th><th>tags</th></tr></thead><tbody>
{{range .Rows}}<tr><td class="num">{{.ID}}</td><td>{{.Started}}</td><td class="num">{{.Value}}</td><td class="{{.Class}}">{{.Change}}</td><td>{{.Tags}}</td></tr>
{{end}}</tbody></table>
<p>Change points: E-divisive means with a permutation test (docs/history.md). <code>ndbench history show ID</code> shows a run; <code>ndbench history show ID --format json</code> gives its report for <code>ndbench compare</code>.</p>
</body></html>
`))

type trendRow struct {
	ID                                  int64
	Started, Value, Change, Class, Tags string
}

// WriteTrendHTML writes p as a self-contained HTML page: an SVG chart of the trend with
// the change points marked (red where the figure got worse), and the table of runs.
func WriteTrendHTML(w io.Writer, p TrendPage) error {
	marks := map[int]ChangePoint{}
	for _, c := range p.ChangePoints {
		marks[c.Index] = c
	}
	rows := make([]trendRow, len(p.Points))
	for i, pt := range p.Points {
		rows[i] = trendRow{ID: pt.RunID, Started: pt.Started.UTC().Format(time.DateTime), Value: strconv.FormatFloat(pt.Value, 'g', 6, 64), Tags: TagsText(pt.Tags)}
		if c, ok := marks[i]; ok {
			rows[i].Class = changeClass(c, p.Figure)
			rows[i].Change = fmt.Sprintf("%s %+.1f%% (p=%.3f)", rows[i].Class, relChange(c), c.P)
		}
	}
	sub := fmt.Sprintf("%d runs", len(p.Points))
	if p.Filter != "" {
		sub += " · " + p.Filter
	}
	err := trendTemplate.Execute(w, map[string]any{
		"Title": p.Figure.String(), "Subtitle": sub, "Figure": p.Figure.String(), "Unit": p.Figure.Unit(),
		"SVG":  template.HTML(trendSVG(p, marks)), //nolint:gosec // built here from numbers and escaped text only
		"Rows": rows,
	})
	if err != nil {
		return fmt.Errorf("write trend page: %w", err)
	}
	return nil
}

func changeClass(c ChangePoint, f Figure) string {
	if (c.After > c.Before) == f.WorseUp() {
		return "regression"
	}
	return "improvement"
}

func relChange(c ChangePoint) float64 {
	if c.Before == 0 {
		return 0
	}
	return 100 * (c.After - c.Before) / c.Before
}

// trendSVG draws the points as a line over run order (runs are evenly spaced: nightly
// runs are what matter, not the gaps between them), and a dashed vertical line at each
// change point.
func trendSVG(p TrendPage, marks map[int]ChangePoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" role="img" aria-label="trend of %s" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, template.HTMLEscapeString(p.Figure.String()))
	n := len(p.Points)
	if n == 0 {
		b.WriteString(`<text x="20" y="40">no runs</text></svg>`)
		return b.String()
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range p.Points {
		lo, hi = math.Min(lo, pt.Value), math.Max(hi, pt.Value)
	}
	if lo > 0 && lo < hi/2 {
		lo = 0
	}
	if hi == lo {
		hi, lo = hi+1, lo-1
	}
	span := hi - lo
	lo, hi = lo-0.05*span, hi+0.05*span
	x := func(i int) float64 {
		if n == 1 {
			return padL + plotW/2
		}
		return padL + plotW*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return padT + plotH*(1-(v-lo)/(hi-lo)) }
	for k := 0; k <= 4; k++ {
		v := lo + (hi-lo)*float64(k)/4
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/><text x="%.1f" y="%.1f" font-size="12" text-anchor="end" fill="%s">%s</text>`,
			padL, padL+plotW, y(v), y(v), gridColor, padL-6, y(v)+4, text, strconv.FormatFloat(v, 'g', 4, 64))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" fill="%s">run (oldest to newest)</text>`, padL+plotW/2, chartH-8, text)
	step := max(1, n/10)
	for i := 0; i < n; i += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="%s">%d</text>`, x(i), padT+plotH+16, text, p.Points[i].RunID)
	}
	for i, c := range marks {
		color := okColor
		if changeClass(c, p.Figure) == "regression" {
			color = regressionColor
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="4 3"><title>change point at run %d: %+.1f%%</title></line>`,
			x(i), x(i), padT, padT+plotH, color, p.Points[i].RunID, relChange(c))
	}
	var path strings.Builder
	for i, pt := range p.Points {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(i), y(pt.Value))
	}
	fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.TrimSpace(path.String()), lineColor)
	for i, pt := range p.Points {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>run %d: %s</title></circle>`, x(i), y(pt.Value), lineColor, pt.RunID,
			template.HTMLEscapeString(strconv.FormatFloat(pt.Value, 'g', 6, 64)+" "+TagsText(pt.Tags)))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
