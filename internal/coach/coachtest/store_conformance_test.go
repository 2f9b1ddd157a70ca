package coachtest_test

import (
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/coach/storetest"
)

// TestMemStoreConformance holds the engine tests' in-memory store to the rules of the real one.
func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) coach.Store { return coachtest.NewMemStore() })
}
