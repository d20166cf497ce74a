package sandboxd

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral-sh/corral/internal/httpmw"
	"github.com/corral-sh/corral/internal/problem"
)

// route is one entry of the API table.
type route struct {
	pattern string // ServeMux pattern: "METHOD /path/{wildcard}"
	handler problem.HandlerFunc
}

// table is the whole sandboxd API (DESIGN.md §2), in one place.
func (s *Server) table() []route {
	p, f, sys := s, s.files, s.system
	return []route{
		// Processes.
		{"POST /v1/processes", p.spawnProcess},
		{"GET /v1/processes", p.listProcesses},
		{"GET /v1/processes/{ref}", p.getProcess},
		{"DELETE /v1/processes/{ref}", p.deleteProcess},
		{"POST /v1/processes/{ref}/signal", p.signalProcess},
		{"POST /v1/processes/{ref}/resize", p.resizeProcess},
		{"POST /v1/processes/{ref}/input", p.inputProcess},
		{"POST /v1/processes/{ref}/close-stdin", p.closeStdin},
		{"GET /v1/processes/{ref}/output", p.processOutput},
		{"GET /v1/processes/{ref}/connect", p.connectProcess},
		{"GET /v1/events", p.processEvents},
		{"POST /v1/exec", p.exec},

		// Files.
		{"GET /v1/fs/file", f.readFile},
		{"PUT /v1/fs/file", f.writeFile},
		{"DELETE /v1/fs/file", f.deleteFile},
		{"GET /v1/fs/stat", f.stat},
		{"GET /v1/fs/list", f.list},
		{"POST /v1/fs/mkdir", f.mkdir},
		{"POST /v1/fs/move", f.move},
		{"GET /v1/fs/archive", f.getArchive},
		{"PUT /v1/fs/archive", f.putArchive},
		{"GET /v1/fs/watch", f.watch},
		{"POST /v1/fs/search", f.search},
		{"POST /v1/fs/edit", f.edit},

		// System.
		{"GET /v1/health", sys.health},
		{"GET /v1/info", sys.info},
		{"GET /v1/ports", sys.ports},
		{"/v1/ports/{port}/proxy/{path...}", sys.proxy},
	}
}

// routes builds the handler: the table on a ServeMux, a problem+json 404
// and 405, then the middleware chain. Outermost first:
//
//	recoverPanics  a panic becomes a 500 problem, never a dropped connection
//	observe        request log line and Prometheus metrics
//	authenticate   bearer token (header, or ?access_token= for WS/SSE)
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.table() {
		mux.Handle(rt.pattern, rt.handler)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	var h http.Handler = httpmw.ProblemFallback(mux)
	h = s.authenticate(h)
	h = httpmw.Observe(s.log, s.metrics.http)(h)
	h = httpmw.Recover(h)
	return h
}
