package redisstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestEscalationOverflow keeps, takes and removes entries: a later episode of the same key
// replaces the earlier one, an entry taken is not due again before its lease, Done leaves an
// entry a later episode replaced, a source is bounded, and a tenant's full overflow makes room
// for other learners by evicting entries of the source holding the most, until no source holds
// more than one more than the newcomer's.
func TestEscalationOverflow(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			o := NewEscalationOverflow(f.client, f.prefix)
			o.sourceSize, o.tenantSize = 3, 4
			now := time.UnixMilli(1_800_000_000_000)
			keep := func(tenant, source, key, ep string, due time.Time) (bool, string) {
				t.Helper()
				kept, evicted, err := o.Keep(ctx, tenant, source, key, ep, []byte(`{"episode":"`+ep+`"}`), due)
				if err != nil {
					t.Fatalf("Keep %s: %v", ep, err)
				}
				return kept, evicted
			}
			due := func(tenant string, at time.Time, n int) []string {
				t.Helper()
				es, err := o.Due(ctx, tenant, at, n, at.Add(time.Minute))
				if err != nil {
					t.Fatalf("Due: %v", err)
				}
				var ids []string
				for _, e := range es {
					if want := `{"episode":"` + e.Episode + `"}`; string(e.Body) != want {
						t.Errorf("entry %s: body %s, want %s", e.Key, e.Body, want)
					}
					ids = append(ids, e.Episode)
				}
				return ids
			}

			keep("acme", "key/flood", "key/flood a s1", "ep-1", now)
			keep("acme", "key/flood", "key/flood a s1", "ep-2", now) // the same learner's session: replaces ep-1
			keep("acme", "key/flood", "key/flood b s2", "ep-3", now.Add(time.Second))
			if got, want := due("acme", now, 10), []string{"ep-2"}; !slices.Equal(got, want) {
				t.Errorf("due at now = %q, want %q", got, want)
			}
			if got := due("acme", now.Add(2*time.Second), 10); !slices.Equal(got, []string{"ep-3"}) {
				t.Errorf("due 2s later = %q, want [ep-3] (ep-2 is leased for a minute)", got)
			}
			if got := due("beta", now.Add(time.Hour), 10); len(got) != 0 {
				t.Errorf("another tenant's due = %q, want none", got)
			}
			if err := o.Done(ctx, "acme", "key/flood", "key/flood a s1", "ep-1"); err != nil {
				t.Fatal(err)
			}
			if got := due("acme", now.Add(2*time.Minute), 10); !slices.Equal(got, []string{"ep-2", "ep-3"}) {
				t.Errorf("after Done of a replaced episode: due = %q, want [ep-2 ep-3]", got)
			}
			if err := o.Done(ctx, "acme", "key/flood", "key/flood a s1", "ep-2"); err != nil {
				t.Fatal(err)
			}

			// The source holds ep-3; two more fill its bound of 3, a fourth is refused.
			for i, want := range []bool{true, true, false} {
				if kept, _ := keep("acme", "key/flood", fmt.Sprintf("key/flood c%d s", i), fmt.Sprint("flood-", i), now); kept != want {
					t.Errorf("flood-%d kept = %v, want %v", i, kept, want)
				}
			}
			// The tenant holds 3 of 4: another learner's entry fits, the next evicts one of the
			// flood's, and a third learner's, when no source holds more than one more than it,
			// is refused.
			if kept, ev := keep("acme", "ref/pupil-7", "ref/pupil-7 pupil-7 s7", "pupil-7", now); !kept || ev != "" {
				t.Errorf("pupil-7: kept %v evicted %q, want kept, none evicted", kept, ev)
			}
			kept, ev := keep("acme", "ref/pupil-8", "ref/pupil-8 pupil-8 s8", "pupil-8", now)
			if !kept || !slices.Contains([]string{"ep-3", "flood-0", "flood-1"}, ev) {
				t.Errorf("pupil-8: kept %v evicted %q, want kept, one of the flood's evicted", kept, ev)
			}
			kept, ev = keep("acme", "ref/pupil-9", "ref/pupil-9 pupil-9 s9", "pupil-9", now)
			if !kept || !slices.Contains([]string{"ep-3", "flood-0", "flood-1"}, ev) {
				t.Errorf("pupil-9: kept %v evicted %q, want kept, one of the flood's evicted", kept, ev)
			}
			if kept, ev := keep("acme", "ref/pupil-10", "ref/pupil-10 pupil-10 s10", "pupil-10", now); kept || ev != "" {
				t.Errorf("pupil-10: kept %v evicted %q, want refused (no source holds more than one more)", kept, ev)
			}
			got := due("acme", now.Add(time.Hour), 10)
			for _, want := range []string{"pupil-7", "pupil-8", "pupil-9"} {
				if !slices.Contains(got, want) {
					t.Errorf("due = %q: %s is missing", got, want)
				}
			}
			if len(got) != 4 {
				t.Errorf("due = %q, want 4 entries", got)
			}
			tenants, err := o.Tenants(ctx)
			if err != nil || !slices.Equal(tenants, []string{"acme"}) {
				t.Errorf("Tenants = %q, %v; want [acme]", tenants, err)
			}
		})
	}
}
