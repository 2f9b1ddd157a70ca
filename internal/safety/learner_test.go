package safety

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLearnerJSON reads a record's learner as written now and as it was written before the key
// that asserted it was kept (a bare reference), so that old records are still found and erased.
func TestLearnerJSON(t *testing.T) {
	tests := []struct {
		in   string
		want Learner
	}{
		{`{"learner":{"ref":"pupil-7","asserted_by":"3f2a9c0b1d4e"}}`, Learner{Ref: "pupil-7", AssertedBy: "3f2a9c0b1d4e"}},
		{`{"learner":{"ref":"pupil-7"}}`, Learner{Ref: "pupil-7"}},
		{`{"learner":"pupil-7"}`, Learner{Ref: "pupil-7"}},
		{`{}`, Learner{}},
	}
	for _, tt := range tests {
		var r Record
		if err := json.Unmarshal([]byte(tt.in), &r); err != nil || r.Learner != tt.want {
			t.Errorf("Unmarshal(%s) learner = %+v, %v, want %+v", tt.in, r.Learner, err, tt.want)
		}
	}
	for _, tt := range []struct {
		l    Learner
		want string
	}{
		{Learner{Ref: "pupil-7", AssertedBy: "3f2a9c0b1d4e"}, `"learner":{"ref":"pupil-7","asserted_by":"3f2a9c0b1d4e"}`},
		{Learner{Ref: "pupil-7"}, `"learner":{"ref":"pupil-7"}`},
	} {
		b, err := json.Marshal(Record{Session: "s", Learner: tt.l})
		if err != nil || !json.Valid(b) || !strings.Contains(string(b), tt.want) {
			t.Errorf("Marshal learner %+v = %s, %v, want it to hold %s", tt.l, b, err, tt.want)
		}
	}
	if b, _ := json.Marshal(Record{Session: "s"}); strings.Contains(string(b), "learner") {
		t.Errorf("a record without a learner encodes as %s, want no learner member", b)
	}
}
