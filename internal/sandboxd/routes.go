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
	g := newGitAPI(s)
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

		// Git.
		{"POST /v1/git/clone", g.clone},
		{"GET /v1/git/status", g.status},
		{"GET /v1/git/diff", g.diff},
		{"GET /v1/git/branches", g.branches},
		{"POST /v1/git/branches", g.createBranch},
		{"POST /v1/git/checkout", g.checkout},
		{"POST /v1/git/add", g.add},
		{"POST /v1/git/commit", g.commit},
		{"POST /v1/git/push", g.push},
		{"GET /v1/git/log", g.log},

		// System.
		{"GET /v1/health", sys.health},
		{"GET /v1/info", sys.info},
		{"GET /v1/ports", sys.ports},
		{"/v1/ports/{port}/proxy/{path...}", sys.proxy},

		// Desktop.
		{"POST /v1/desktop/start", s.desktop.start},
		{"POST /v1/desktop/stop", s.desktop.stop},
		{"GET /v1/desktop/status", s.desktop.status},
		{"GET /v1/desktop/screenshot", s.desktop.screenshot},
		{"POST /v1/desktop/action", s.desktop.action},
		{"GET /v1/desktop/windows", s.desktop.windows},
		{"GET /v1/desktop/vnc", s.desktop.vnc},
		{"GET /v1/desktop/novnc", s.desktop.novncIndex},
		{"GET /v1/desktop/novnc/{path...}", s.desktop.novnc},

		// Browser.
		{"GET /v1/browser", s.browser.status},
		{"POST /v1/browser/start", s.browser.start},
		{"POST /v1/browser/stop", s.browser.stop},
		{"GET /v1/browser/tabs", s.browser.listTabs},
		{"POST /v1/browser/tabs", s.browser.openTab},
		{"GET /v1/browser/tabs/{id}", s.browser.getTab},
		{"DELETE /v1/browser/tabs/{id}", s.browser.closeTab},
		{"POST /v1/browser/tabs/{id}/navigate", s.browser.navigate},
		{"POST /v1/browser/tabs/{id}/click", s.browser.click},
		{"POST /v1/browser/tabs/{id}/type", s.browser.typeText},
		{"POST /v1/browser/tabs/{id}/wait", s.browser.wait},
		{"GET /v1/browser/tabs/{id}/text", s.browser.text},
		{"GET /v1/browser/tabs/{id}/ax", s.browser.ax},
		{"POST /v1/browser/tabs/{id}/eval", s.browser.eval},
		{"GET /v1/browser/tabs/{id}/screenshot", s.browser.screenshot},

		// LSP.
		{"POST /v1/lsp/servers", s.lsp.startServer},
		{"GET /v1/lsp/servers", s.lsp.listServers},
		{"GET /v1/lsp/servers/{id}", s.lsp.getServer},
		{"DELETE /v1/lsp/servers/{id}", s.lsp.stopServer},
		{"POST /v1/lsp/servers/{id}/diagnostics", s.lsp.diagnostics},
		{"POST /v1/lsp/servers/{id}/definition", s.lsp.definition()},
		{"POST /v1/lsp/servers/{id}/references", s.lsp.references()},
		{"POST /v1/lsp/servers/{id}/hover", s.lsp.hover()},
		{"POST /v1/lsp/servers/{id}/symbols", s.lsp.symbols()},

		// Forwards: 127.0.0.1 TCP ports to unix sockets in /run/corral.
		{"POST /v1/forwards", p.createForward},
		{"GET /v1/forwards", p.listForwards},
		{"DELETE /v1/forwards/{id}", p.deleteForward},
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
