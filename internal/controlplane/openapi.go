package controlplane

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/version"
)

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// OpenAPI builds the API description from the route table: every route,
// its parameters, its request and success schemas (generated from the
// api/cpapi types) and the problem+json error shape.
func (s *Server) OpenAPI() (*openapi3.T, error) {
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{Title: "Corral control plane", Version: version.String(),
			Description: "Jobs, sandboxes and their event logs. See DESIGN.md §3."},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas: openapi3.Schemas{},
			SecuritySchemes: openapi3.SecuritySchemes{
				"bearer": &openapi3.SecuritySchemeRef{Value: openapi3.NewJWTSecurityScheme().WithBearerFormat("opaque")},
			},
		},
	}
	// Schemas are inlined: the generator's component export leaves nested
	// types unresolved.
	gen := openapi3gen.NewGenerator(openapi3gen.SchemaCustomizer(nullableTime))
	schema := func(v any) (*openapi3.SchemaRef, error) {
		ref, err := gen.NewSchemaRefForValue(v, doc.Components.Schemas)
		if err != nil {
			return nil, fmt.Errorf("schema of %T: %w", v, err)
		}
		return ref, nil
	}
	problemRef, err := schema(problem.Details{})
	if err != nil {
		return nil, err
	}
	errResp := openapi3.NewResponse().WithDescription("An error (RFC 9457 problem+json)").
		WithContent(openapi3.NewContentWithSchemaRef(problemRef, []string{problem.ContentType}))
	security := openapi3.NewSecurityRequirements().With(openapi3.NewSecurityRequirement().Authenticate("bearer"))

	for _, rt := range s.table() {
		op := openapi3.NewOperation()
		op.Summary = rt.summary
		if !rt.public {
			op.Security = security
		}
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			op.AddParameter(openapi3.NewPathParameter(m[1]).WithSchema(openapi3.NewStringSchema()))
		}
		if rt.in != nil {
			ref, err := schema(rt.in)
			if err != nil {
				return nil, err
			}
			op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithJSONSchemaRef(ref)}
		}
		ok := openapi3.NewResponse().WithDescription(rt.summary)
		switch {
		case rt.out != nil && rt.media != "":
			ref, err := schema(rt.out)
			if err != nil {
				return nil, err
			}
			ok.WithContent(openapi3.Content{
				"application/json": openapi3.NewMediaType().WithSchemaRef(ref),
				rt.media:           openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema()),
			})
		case rt.out != nil:
			ref, err := schema(rt.out)
			if err != nil {
				return nil, err
			}
			ok.WithContent(openapi3.NewContentWithJSONSchemaRef(ref))
		case rt.media == mediaAny || rt.media == "application/json":
			// A pass-through (the sandboxd proxy) or a document: any body.
			ok.WithContent(openapi3.Content{rt.media: openapi3.NewMediaType().WithSchema(openapi3.NewSchema())})
		case rt.media != "":
			ok.WithContent(openapi3.Content{rt.media: openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema())})
		}
		op.Responses = openapi3.NewResponses(
			openapi3.WithStatus(rt.status, &openapi3.ResponseRef{Value: ok}),
			openapi3.WithName("default", errResp),
		)
		methods := []string{rt.method}
		if rt.method == "ANY" {
			methods = []string{"GET", "POST", "PUT", "DELETE"}
		}
		for _, m := range methods {
			mop := *op
			mop.OperationID = operationID(m, rt.path)
			doc.AddOperation(rt.path, m, &mop)
		}
	}
	return doc, nil
}

// nullableTime marks pointer fields (exit_code, started_at...) nullable,
// as the API writes them as JSON null.
func nullableTime(name string, t reflect.Type, tag reflect.StructTag, schema *openapi3.Schema) error {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Map || t.Kind() == reflect.Slice {
		schema.Nullable = true
	}
	return nil
}

func operationID(method, path string) string {
	p := strings.NewReplacer("v1/", "", "{", "", "}", "", "/", "_", ".", "_").Replace(strings.TrimPrefix(path, "/"))
	return strings.ToLower(method) + "_" + strings.Trim(p, "_")
}

// openapiHandler serves the document, built once.
func (s *Server) openapiHandler(w http.ResponseWriter, r *http.Request) error {
	s.specOnce.Do(func() {
		doc, err := s.OpenAPI()
		if err == nil {
			s.spec, err = json.MarshalIndent(doc, "", "  ")
		}
		s.specErr = err
	})
	if s.specErr != nil {
		return s.specErr
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(s.spec)))
	_, _ = w.Write(s.spec)
	return nil
}
