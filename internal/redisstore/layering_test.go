package redisstore

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDoesNotImportTheHTTPLayer checks that the store depends on the engine's ports only: a
// store that imported an adapter would drag the HTTP layer into every program that keeps state.
func TestDoesNotImportTheHTTPLayer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasSuffix(pkg, "/internal/httpapi") {
			t.Errorf("go list -deps ./internal/redisstore lists %s, want no HTTP adapter", pkg)
		}
	}
}
