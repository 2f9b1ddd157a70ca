// Package contracttest holds the tests that hold the running gateway to api/openapi.yaml: they
// drive every documented route of the real gateway (internal/apptest) through success and
// failure, and check every real answer (JSON bodies, error bodies, and each NDJSON line of
// toulmin, cards and module turns) against the document with internal/openapitest. It has no
// code outside its tests.
package contracttest
