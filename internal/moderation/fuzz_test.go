package moderation

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/safety"
)

// checkVerdict fails t unless v is well formed: a crisis exactly when it has categories, then
// of severity High, categories and rules sorted without repeats, every rule with prefix.
func checkVerdict(t *testing.T, v safety.Verdict, prefix string) {
	t.Helper()
	if v.Crisis != (len(v.Categories) > 0) || (v.Crisis && v.Severity != safety.SeverityHigh) || (!v.Crisis && v.Severity != safety.SeverityNone) {
		t.Fatalf("inconsistent verdict %+v", v)
	}
	if !slices.IsSorted(v.Categories) || len(slices.Compact(slices.Clone(v.Categories))) != len(v.Categories) ||
		!slices.IsSorted(v.Rules) || len(slices.Compact(slices.Clone(v.Rules))) != len(v.Rules) {
		t.Fatalf("categories or rules unsorted or repeated: %+v", v)
	}
	for _, r := range v.Rules {
		if !strings.HasPrefix(r, prefix) {
			t.Fatalf("rule %q lacks %q", r, prefix)
		}
	}
}

// FuzzParseModeration feeds parseModeration arbitrary bodies (seeds in testdata/fuzz). Besides not panicking, a body it
// reads without error must really report, as true or false, every category the stage maps:
// a category the endpoint did not report is never read as clean.
func FuzzParseModeration(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		for stage, keys := range map[safety.Stage][]string{
			safety.StageInput:  {modSelfHarm, modSelfHarmIntent},
			safety.StageOutput: {modSelfHarmInstructions},
		} {
			v, err := parseModeration(stage, body)
			if err != nil {
				if v.Crisis || len(v.Categories)+len(v.Rules) > 0 {
					t.Fatalf("error %v came with verdict %+v", err, v)
				}
				continue
			}
			checkVerdict(t, v, ModerationRulePrefix)
			var r struct {
				Results []struct {
					Categories map[string]any `json:"categories"`
				} `json:"results"`
			}
			if json.Unmarshal(body, &r) != nil || len(r.Results) == 0 {
				t.Fatalf("read a verdict %+v from a body without results", v)
			}
			for _, k := range keys {
				b, ok := r.Results[0].Categories[k].(bool)
				if !ok {
					t.Fatalf("read a verdict %+v without category %q", v, k)
				}
				if b && !v.Crisis {
					t.Fatalf("%q flagged on %s but no crisis: %+v", k, stage, v)
				}
			}
		}
	})
}

// FuzzParseLlamaGuard3 feeds parseLlamaGuard3 arbitrary model output (seeds in testdata/fuzz). A verdict read without
// error comes from output whose first line says safe or unsafe, and is a crisis exactly when
// Llama Guard named S11.
func FuzzParseLlamaGuard3(f *testing.F) {
	f.Fuzz(func(t *testing.T, out string) {
		for _, stage := range []safety.Stage{safety.StageInput, safety.StageOutput} {
			v, err := parseLlamaGuard3(stage, out)
			if err != nil {
				if v.Crisis || len(v.Categories)+len(v.Rules) > 0 {
					t.Fatalf("error %v came with verdict %+v", err, v)
				}
				continue
			}
			checkVerdict(t, v, LlamaGuard3RulePrefix)
			first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
			switch strings.ToLower(strings.TrimSpace(first)) {
			case "safe":
				if v.Crisis || len(v.Rules) > 0 {
					t.Fatalf("safe read as %+v", v)
				}
			case "unsafe":
				if len(v.Rules) == 0 {
					t.Fatalf("unsafe read without categories: %+v", v)
				}
			default:
				t.Fatalf("read %+v from %q", v, out)
			}
			if v.Crisis != slices.Contains(v.Rules, LlamaGuard3RulePrefix+"S11") {
				t.Fatalf("crisis %v but rules %v", v.Crisis, v.Rules)
			}
		}
	})
}
