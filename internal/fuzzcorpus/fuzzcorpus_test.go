package fuzzcorpus

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		want    []any
		wantErr bool
	}{
		{name: "bytes and string", file: "go test fuzz v1\n[]byte(\"{\\\"a\\\":\\\"\\\\u00e9\\\"}\\n\")\nstring(\"toulmin\")\n",
			want: []any{[]byte("{\"a\":\"\\u00e9\"}\n"), "toulmin"}},
		{name: "int", file: "go test fuzz v1\n[]byte(\"x\")\nint(-3)\n", want: []any{[]byte("x"), -3}},
		{name: "no header", file: "[]byte(\"x\")\n", wantErr: true},
		{name: "no value", file: "go test fuzz v1\n", wantErr: true},
		{name: "unsupported type", file: "go test fuzz v1\nfloat64(1)\n", wantErr: true},
		{name: "bad quoting", file: "go test fuzz v1\nstring(\"x)\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "seed"), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Load(dir)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Load = %v, want an error", got)
				}
				return
			}
			if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Fatalf("Load = %#v, %v; want [%#v]", got, err, tt.want)
			}
		})
	}
}
