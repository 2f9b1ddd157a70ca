// Package web owns the reference ChatPanel: a plain HTML, CSS and JavaScript (ES modules) front
// end for the gateway's three contracts, embedded in the binary and served by Handler. It has no
// build step and loads nothing from other origins; it talks to the gateway's API on the same
// origin. Handler also serves the ES modules of the JavaScript client (clients/js) at /client/,
// so the panel and any other page on the gateway's origin use the client's stream code.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/coachgw/coachgw/clients/js"
)

//go:embed static
var static embed.FS

// contentTypes maps the extensions of the embedded files to their media types. It is explicit
// rather than mime.TypeByExtension, whose answers depend on the host's mime tables; a browser
// refuses an ES module that is not served as JavaScript.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// contentSecurityPolicy allows only the panel's own scripts and styles and requests to its own
// origin: model text is rendered as DOM text nodes, and this is the second line of defence
// should a bug ever let markup through. Images and media of a module response may come from
// https URLs the model names.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' https: data:; media-src 'self' https:; connect-src 'self'; font-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file, ready to serve.
type file struct {
	name  string
	data  []byte
	ctype string
	etag  string
}

// Handler returns the handler of the ChatPanel. It answers GET and HEAD of "/" and
// "/index.html" with the page, of "/static/<path>" with the embedded files and of
// "/client/<file>.js" with the JavaScript client's modules; any other path is
// a 404 with the API's JSON error body, so the handler can also sit behind a catch-all route.
// Responses carry an ETag and "Cache-Control: no-cache", so browsers revalidate and a new
// binary's files are picked up at once.
func Handler() http.Handler {
	files := map[string]*file{}
	err := addFiles(files, static, "static", "/static")
	if err == nil {
		err = addFiles(files, jsclient.FS(), ".", "/client")
	}
	if err != nil {
		panic("web: reading the embedded files: " + err.Error()) // embedded at build time; cannot fail
	}
	index := files["/static/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this route")
			return
		}
		f := index
		if p := r.URL.Path; p != "/" && p != "/index.html" {
			f = files[p]
		}
		if f == nil {
			writeError(w, http.StatusNotFound, "not_found", "no such route")
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if strings.HasPrefix(f.ctype, "text/html") {
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			h.Set("X-Frame-Options", "DENY")
		}
		// ServeContent answers If-None-Match with 304, ranges and HEAD; the zero modtime leaves
		// Last-Modified out, the ETag alone validates.
		http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.data))
	})
}

// addFiles adds the files under dir of fsys to files, each at prefix + its path below dir.
func addFiles(files map[string]*file, fsys fs.FS, dir, prefix string) error {
	return fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			ctype = "application/octet-stream"
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		files[prefix+"/"+rel] = &file{name: path.Base(p), data: data, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
}

// writeError writes the gateway's JSON error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":"` + code + `","message":"` + message + `"}` + "\n"))
}
