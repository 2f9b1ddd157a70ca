// Package schema validates model output against the gateway's JSON schemas and normalises it
// first: the markdown fence some models wrap JSON in, and the nulls that OpenAI's strict
// structured-output mode writes for absent optional fields.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xeipuuv/gojsonschema"

	"github.com/coachgw/coachgw/api"
)

// Validator checks documents against one compiled schema. It is safe for concurrent use.
type Validator struct {
	name   string
	schema *gojsonschema.Schema
}

// Load compiles the embedded api schema name; it panics on a broken schema, which is a build
// defect rather than a runtime condition.
func Load(name string) *Validator {
	s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(api.Schema(name)))
	if err != nil {
		panic(fmt.Sprintf("schema %s: %v", name, err))
	}
	return &Validator{name: name, schema: s}
}

// Validate checks the decoded document v (as produced by encoding/json into any) and returns
// an error listing every violation, or nil.
func (v *Validator) Validate(doc any) error {
	return v.validate(gojsonschema.NewGoLoader(doc))
}

// ValidateJSON checks raw, one JSON document, as it is: no fence is stripped and nothing is
// normalised, so it is for documents the gateway encoded itself. It returns what Validate
// does. It spares such a caller the decode into any that Validate needs, and gojsonschema's
// re-encoding and second decode of that value: BenchmarkGuardsAndSchema in internal/toulmin.
func (v *Validator) ValidateJSON(raw []byte) error {
	return v.validate(gojsonschema.NewBytesLoader(raw))
}

func (v *Validator) validate(doc gojsonschema.JSONLoader) error {
	res, err := v.schema.Validate(doc)
	if err != nil {
		return fmt.Errorf("validating against %s: %w", v.name, err)
	}
	if res.Valid() {
		return nil
	}
	msgs := make([]string, 0, len(res.Errors()))
	for _, e := range res.Errors() {
		msgs = append(msgs, e.String())
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// Decode parses raw JSON into a generic document with numbers kept exact, after stripping a
// surrounding markdown code fence. The one exception is a negative zero ("-0", "-0.0e3", or a
// negative number too small for a float64), which becomes "0": a grammar-constrained model may
// write it for a value whose minimum is 0, it passes that minimum, and a "-0" in a result is a
// bug report waiting to happen in every client.
func Decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(StripFence(raw)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return noNegativeZero(doc), nil
}

// noNegativeZero replaces every negative zero in doc by 0, recursively, and returns doc.
func noNegativeZero(doc any) any {
	switch v := doc.(type) {
	case json.Number:
		if strings.HasPrefix(string(v), "-") {
			if f, err := v.Float64(); err == nil && f == 0 {
				return json.Number("0")
			}
		}
	case map[string]any:
		for k, x := range v {
			v[k] = noNegativeZero(x)
		}
	case []any:
		for i, x := range v {
			v[i] = noNegativeZero(x)
		}
	}
	return doc
}

// StripNulls removes every object member whose value is null, recursively, and returns doc.
// Strict structured output makes models write null for fields they mean to leave out; none of
// our schemas gives null a meaning of its own.
func StripNulls(doc any) any {
	switch v := doc.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil {
				delete(v, k)
				continue
			}
			v[k] = StripNulls(x)
		}
	case []any:
		for i, x := range v {
			v[i] = StripNulls(x)
		}
	}
	return doc
}

// StripFence returns raw without a surrounding ``` or ```json fence and outer white space.
func StripFence(raw []byte) []byte {
	t := bytes.TrimSpace(raw)
	if !bytes.HasPrefix(t, []byte("```")) {
		return t
	}
	nl := bytes.IndexByte(t, '\n')
	if nl < 0 {
		return t
	}
	body := bytes.TrimSpace(t[nl+1:])
	body = bytes.TrimSuffix(body, []byte("```"))
	return bytes.TrimSpace(body)
}
