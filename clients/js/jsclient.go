// Package jsclient embeds the ES modules of the coachgw JavaScript client (@coachgw/client, the
// npm package in this directory), so the gateway can serve them to pages that import them
// without a build step, as the reference ChatPanel does with /client/stream.js.
package jsclient

import (
	"embed"
	"io/fs"
)

//go:embed src/*.js
var src embed.FS

// FS returns the package's module files (src/*.js), rooted at src: "stream.js", "index.js", ….
func FS() fs.FS {
	sub, err := fs.Sub(src, "src")
	if err != nil {
		panic("jsclient: " + err.Error()) // "src" is a valid path; cannot fail
	}
	return sub
}
