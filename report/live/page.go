package live

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"

	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results/summary"
)

var (
	//go:embed live.js
	liveJS string
	//go:embed panel.html
	panelHTML string
)

// page writes the report's own page of the run so far, with the live
// panel and the script that feeds it from /events.
func (s *Server) page(w http.ResponseWriter) {
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	if run == nil {
		run = &report.Run{Name: "live", Label: "live", Summary: &summary.Summary{Processes: 1}}
	}
	var b bytes.Buffer
	if err := report.WriteLive(&b, []*report.Run{run}, report.Live{Panel: template.HTML(panelHTML), Script: template.JS(liveJS)}); err != nil {
		http.Error(w, "live page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:")
	w.Write(b.Bytes())
}
