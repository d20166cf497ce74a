package controlplane

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openapiJSON is the API description, generated from the route table by
// TestOpenAPIUpToDate (which fails when the two drift apart).
//
//go:embed openapi.json
var openapiJSON []byte

// openapiHandler serves /openapi.json.
func (s *Server) openapiHandler(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(openapiJSON)))
	_, _ = w.Write(openapiJSON)
	return nil
}
