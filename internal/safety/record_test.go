package safety

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestRecordRoundTrip writes audit records as JSON and reads them back whole, as the audit
// store does: every severity by its name, ran true or the reason it did not run.
func TestRecordRoundTrip(t *testing.T) {
	for _, sev := range []Severity{SeverityNone, SeverityConcern, SeverityHigh, SeverityImminent} {
		for _, ran := range []Ran{{}, {NotRun: "timeout"}} {
			in := Record{Time: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC), Session: "s", Stage: StageOutput,
				Classifier: "moderation", Ran: ran, Categories: []Category{CategorySuicide}, Severity: sev,
				Action: ActionRetracted, Mode: ModeObserve, LatencyMS: 1.5}
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			var got Record
			if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, in) {
				t.Errorf("%s read back as %+v, %v; want %+v", b, got, err, in)
			}
		}
	}
	var s Severity
	if err := json.Unmarshal([]byte(`"urgent"`), &s); err == nil {
		t.Errorf("an unknown severity read as %v, want an error", s)
	}
}
