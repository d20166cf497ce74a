package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/corral-sh/corral/internal/problem"
)

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// buildOpenAPI builds the API description from the route table: every
// route, its parameters, its request and success schemas (generated from
// the api/cpapi types) and the problem+json error shape. It lives in a test
// so kin-openapi stays out of the binary; TestOpenAPIUpToDate keeps the
// committed openapi.json equal to what it builds.
func buildOpenAPI(s *Server) (*openapi3.T, error) {
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{Title: "Corral control plane", Version: "v1",
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
		if rt.also != 0 {
			op.Responses.Set(strconv.Itoa(rt.also), &openapi3.ResponseRef{Value: ok})
		}
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

// TestOpenAPIUpToDate regenerates the document from the route table and
// fails if openapi.json (what the server serves) drifted from it. Run with
// UPDATE_OPENAPI=1 to rewrite the file after changing routes or types.
func TestOpenAPIUpToDate(t *testing.T) {
	doc, err := buildOpenAPI(&Server{})
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the generated document is invalid: %v", err)
	}
	want, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if os.Getenv("UPDATE_OPENAPI") != "" {
		if err := os.WriteFile("openapi.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(openapiJSON, want) {
		t.Fatalf("openapi.json is out of date with the route table; regenerate it with UPDATE_OPENAPI=1 go test -run TestOpenAPIUpToDate ./internal/controlplane/")
	}
}
