package sandboxd

import (
	"net/http"

	"github.com/corral-sh/corral/internal/errdefs"
)

var errProcsPending = errdefs.Unavailablef("pending")

func (s *Server) spawnProcess(w http.ResponseWriter, r *http.Request) error   { return errProcsPending }
func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) error  { return errProcsPending }
func (s *Server) getProcess(w http.ResponseWriter, r *http.Request) error     { return errProcsPending }
func (s *Server) deleteProcess(w http.ResponseWriter, r *http.Request) error  { return errProcsPending }
func (s *Server) signalProcess(w http.ResponseWriter, r *http.Request) error  { return errProcsPending }
func (s *Server) resizeProcess(w http.ResponseWriter, r *http.Request) error  { return errProcsPending }
func (s *Server) inputProcess(w http.ResponseWriter, r *http.Request) error   { return errProcsPending }
func (s *Server) closeStdin(w http.ResponseWriter, r *http.Request) error     { return errProcsPending }
func (s *Server) processOutput(w http.ResponseWriter, r *http.Request) error  { return errProcsPending }
func (s *Server) connectProcess(w http.ResponseWriter, r *http.Request) error { return errProcsPending }
func (s *Server) processEvents(w http.ResponseWriter, r *http.Request) error  { return errProcsPending }
func (s *Server) exec(w http.ResponseWriter, r *http.Request) error           { return errProcsPending }
