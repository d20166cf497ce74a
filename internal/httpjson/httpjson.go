// Package httpjson decodes JSON request bodies strictly and writes JSON
// responses, turning malformed input into errdefs classes.
package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/corral-sh/corral/internal/errdefs"
)

// DefaultLimit caps a JSON request body unless the route says otherwise.
const DefaultLimit = 1 << 20

// Decode reads one JSON object from r's body into v. Unknown fields,
// trailing data, invalid UTF-8 and bodies over limit bytes are errors of
// class ErrInvalid or ErrTooLarge. An empty body is invalid.
func Decode(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	if limit <= 0 {
		limit = DefaultLimit
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errdefs.TooLargef("request body exceeds %d bytes", limit)
		}
		return errdefs.Wrap(errdefs.ErrInvalid, err, "reading request body failed")
	}
	return Unmarshal(data, v)
}

// Unmarshal decodes data strictly into v, as Decode does.
func Unmarshal(data []byte, v any) error {
	if len(data) == 0 {
		return errdefs.Invalidf("request body is empty; a JSON object is required")
	}
	if !utf8.Valid(data) {
		return errdefs.Invalidf("request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errdefs.Wrap(errdefs.ErrInvalid, err, describe(err))
	}
	if dec.More() {
		return errdefs.Invalidf("request body has data after the JSON object")
	}
	return nil
}

func describe(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %q must be %s", te.Field, te.Type)
		}
		return fmt.Sprintf("body must be a JSON %s", te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated JSON body"
	}
	// json's unknown-field error reads `json: unknown field "x"`, safe to show.
	return err.Error()
}

// Write writes v as JSON with the given status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
