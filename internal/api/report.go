package api

import (
	"bytes"
	"context"
	"time"

	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/web"
)

// HTMLReport is a self-contained HTML report.
type HTMLReport struct {
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition"`
	Body               []byte
}

func (s *Server) currentReport() *report.Report {
	return report.Build(s.inst.ReportInput(s.opts.Version))
}

func (s *Server) getReport(context.Context, *empty) (*out[*report.Report], error) {
	return &out[*report.Report]{s.currentReport()}, nil
}

func (s *Server) reportHTML(context.Context, *empty) (*HTMLReport, error) {
	var b bytes.Buffer
	if err := report.WriteHTML(&b, s.currentReport(), report.Charts(web.Charts())); err != nil {
		return nil, err
	}
	return &HTMLReport{
		ContentType:        "text/html; charset=utf-8",
		ContentDisposition: `attachment; filename="ndbench-report-` + time.Now().UTC().Format("20060102T150405Z") + `.html"`,
		Body:               b.Bytes(),
	}, nil
}
