// Package api embeds the gateway's published interface: the JSON schemas of every contract's
// result and the OpenAPI description, so the binary validates against exactly what it documents.
package api

import "embed"

// Files holds schemas/*.json and openapi.yaml.
//
//go:embed schemas/*.json openapi.yaml
var Files embed.FS

// Schema returns the named schema file's bytes, e.g. Schema("coach-ai-result.json").
func Schema(name string) []byte {
	b, err := Files.ReadFile("schemas/" + name)
	if err != nil {
		panic("api: missing embedded schema " + name)
	}
	return b
}
