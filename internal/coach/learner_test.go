package coach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// learnerFake is storeFake with a fake learner index whose listing a test sets, so that it can
// hold what a real index may: ids of expired sessions and of sessions that are not the learner's.
// It is the test's LearnerAudit too, and records the erasures in the order they reach it.
type learnerFake struct {
	*storeFake
	listed map[string][]string // by tenant + "/" + learner
	events []safety.Record
	erased []string
}

func (l *learnerFake) EraseLearnerSafetyEvents(_ context.Context, tenant, learner string) error {
	l.erased = append(l.erased, "events of "+tenant+"/"+learner)
	return nil
}

// learnerService returns a Service over st, whose audit is st.
func learnerService(st *learnerFake) *coach.Service {
	return coach.New(coach.Deps{
		Store: st, Upstreams: []coach.Upstream{{Name: "default", Model: &fakeModel{}}},
		Contracts: []coach.Contract{echoContract{}}, Options: testOptions(), LearnerAudit: st,
	})
}

func (l *learnerFake) LearnerSessions(_ context.Context, tenant, learner string) ([]string, error) {
	return l.listed[tenant+"/"+learner], nil
}

func (l *learnerFake) LearnerSafetyEvents(_ context.Context, tenant, learner string, each func(safety.Record) error) error {
	for _, r := range l.events {
		if r.Tenant == tenant && r.Learner.Ref == learner {
			if err := each(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// exported is an export as its lines put it together.
type exported struct {
	learner      string
	sessions     []*coach.Session
	transcripts  map[string][]coach.TranscriptEntry
	safetyEvents []safety.Record
	lines        []string // the type of each line, in order
}

// exportOf runs svc's export of learner of tenant and puts its lines together.
func exportOf(svc *coach.Service, tenant, learner string) (exported, error) {
	out := exported{transcripts: map[string][]coach.TranscriptEntry{}}
	err := svc.ExportLearner(context.Background(), tenant, learner, func(line any) error {
		switch l := line.(type) {
		case coach.ExportLearnerLine:
			out.learner = l.Learner
			out.lines = append(out.lines, l.Type)
		case coach.ExportSessionLine:
			out.sessions = append(out.sessions, l.Session)
			out.lines = append(out.lines, l.Type)
		case coach.ExportTranscriptLine:
			out.transcripts[l.Session] = append(out.transcripts[l.Session], l.Entries...)
			out.lines = append(out.lines, l.Type)
		case coach.ExportSafetyEventLine:
			out.safetyEvents = append(out.safetyEvents, l.Event)
			out.lines = append(out.lines, l.Type)
		default:
			return fmt.Errorf("unexpected line %#v", line)
		}
		return nil
	})
	return out, err
}

func (l *learnerFake) EraseLearner(_ context.Context, tenant, learner string) error {
	l.erased = append(l.erased, tenant+"/"+learner)
	return nil
}

func TestExportLearner(t *testing.T) {
	ctx := context.Background()
	st := &learnerFake{storeFake: newStoreFake(), listed: map[string][]string{}}
	svc := learnerService(st)
	clock := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	svc.SetNow(func() time.Time { clock = clock.Add(time.Minute); return clock })
	create := func(tenant, learner string) *coach.Session {
		t.Helper()
		s, err := svc.CreateSession(ctx, tenant, "echo", coach.NewSession{Learner: learner})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	older, newer := create("acme", "pupil-7"), create("acme", "pupil-7")
	someoneElse := create("acme", "pupil-8")
	otherTenant := create("globex", "pupil-7")
	// A transcript longer than a page is exported whole, in order.
	const entries = 2*coach.MaxTranscriptPage + 7
	long := make([]coach.TranscriptEntry, entries)
	for i := range long {
		long[i] = coach.TranscriptEntry{Role: coach.TranscriptLearner, Input: json.RawMessage(fmt.Sprintf(`{"message":"%d"}`, i))}
	}
	claimed, token, err := st.Claim(ctx, "acme", newer.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claimed.Version++
	if err := st.Commit(ctx, claimed, token, coach.CommitExtra{Transcript: long}); err != nil {
		t.Fatal(err)
	}
	// The index lists them newest first, an expired session and sessions that are not this
	// learner's: the export holds only this learner's live sessions, oldest first.
	st.listed["acme/pupil-7"] = []string{newer.ID, coach.NewID(), someoneElse.ID, otherTenant.ID, "not-an-id", older.ID}
	st.events = []safety.Record{
		{Tenant: "acme", Learner: safety.Learner{Ref: "pupil-7"}, Session: older.ID},
		{Tenant: "acme", Learner: safety.Learner{Ref: "pupil-8"}, Session: someoneElse.ID},
		{Tenant: "globex", Learner: safety.Learner{Ref: "pupil-7"}, Session: otherTenant.ID},
	}
	exp, err := exportOf(svc, "acme", "pupil-7")
	if err != nil {
		t.Fatalf("ExportLearner: %v", err)
	}
	var got []string
	for _, s := range exp.sessions {
		got = append(got, s.ID)
	}
	if want := []string{older.ID, newer.ID}; !slices.Equal(got, want) || exp.learner != "pupil-7" {
		t.Errorf("exported sessions of %q = %v, want %v of pupil-7", exp.learner, got, want)
	}
	// One line per session and per transcript page (three of the newer one's), then the events.
	wantLines := []string{coach.ExportLearnerType, coach.ExportSessionType, coach.ExportSessionType, coach.ExportTranscriptType, coach.ExportTranscriptType, coach.ExportTranscriptType, coach.ExportSafetyEventType}
	if !slices.Equal(exp.lines, wantLines) {
		t.Errorf("export lines = %v, want %v", exp.lines, wantLines)
	}
	tr := exp.transcripts[newer.ID]
	if len(tr) != entries || tr[0].Seq != 1 || tr[len(tr)-1].Seq != entries || !slices.IsSortedFunc(tr, func(a, b coach.TranscriptEntry) int { return int(a.Seq - b.Seq) }) {
		t.Errorf("exported transcript: %d entries, want %d in order from seq 1", len(tr), entries)
	}
	if len(exp.safetyEvents) != 1 || exp.safetyEvents[0].Session != older.ID {
		t.Errorf("exported safety events = %+v, want the one of %s", exp.safetyEvents, older.ID)
	}

	none, err := exportOf(svc, "acme", "never-seen")
	if err != nil || len(none.sessions) != 0 || len(none.safetyEvents) != 0 || !slices.Equal(none.lines, []string{coach.ExportLearnerType}) {
		t.Errorf("export of a learner never seen = %+v, %v, want its first line alone", none, err)
	}
}

func TestEraseLearner(t *testing.T) {
	st := &learnerFake{storeFake: newStoreFake()}
	svc := learnerService(st)
	if err := svc.EraseLearner(context.Background(), "acme", "pupil-7"); err != nil {
		t.Fatalf("EraseLearner: %v", err)
	}
	// The records go first: a failure after them leaves the index, and with it the next
	// erasure's way to the sessions.
	if want := []string{"events of acme/pupil-7", "acme/pupil-7"}; !slices.Equal(st.erased, want) {
		t.Errorf("erased = %v, want %v", st.erased, want)
	}
}

func TestLearnerRoutesRefuse(t *testing.T) {
	ctx := context.Background()
	indexed := learnerService(&learnerFake{storeFake: newStoreFake()})
	plain := coach.NewService(newStoreFake(), &fakeModel{}, []coach.Contract{echoContract{}}, testOptions(), nil)
	tests := []struct {
		name    string
		svc     *coach.Service
		learner string
		want    coach.Kind
	}{
		{"an empty reference", indexed, "", coach.KindInvalid},
		{"a reference with a slash", indexed, "a/b", coach.KindInvalid},
		{"a reference with a space", indexed, "a b", coach.KindInvalid},
		{"a store without a learner index", plain, "pupil-7", coach.KindInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := exportOf(tt.svc, "acme", tt.learner)
			var e *coach.Error
			if !errors.As(err, &e) || e.Kind != tt.want {
				t.Errorf("ExportLearner error = %v, want kind %d", err, tt.want)
			}
			err = tt.svc.EraseLearner(ctx, "acme", tt.learner)
			if !errors.As(err, &e) || e.Kind != tt.want {
				t.Errorf("EraseLearner error = %v, want kind %d", err, tt.want)
			}
		})
	}
}
