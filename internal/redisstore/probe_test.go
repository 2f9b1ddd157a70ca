package redisstore

import (
	"context"
	"testing"
	"time"
)

// TestPingOnItsOwnConnection attacks readiness from the turns' side: every connection of the
// store's pool is taken (here its one connection, by a command that waits, as a burst of
// claims waiting on a busy machine takes them all), and Ping must still say that Redis answers,
// on the probe's own connection. With the probe sharing the store's pool, the same Ping fails:
// the attack is real.
func TestPingOnItsOwnConnection(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			tests := []struct {
				name     string
				ownProbe bool
				wantErr  bool
			}{
				{"probe of its own", true, false},
				{"probe sharing the store's pool", false, true},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					busy, err := PoolOf(f.client, 1)
					if err != nil {
						t.Fatal(err)
					}
					defer busy.Close()
					opts := Options{Prefix: f.prefix, Timeout: 300 * time.Millisecond}
					if tt.ownProbe {
						probe, err := PoolOf(f.client, 1)
						if err != nil {
							t.Fatal(err)
						}
						defer probe.Close()
						opts.Probe = probe
					}
					store := New(busy, opts)

					// The store's one connection waits on a list nobody pushes to.
					held := make(chan struct{})
					go func() {
						defer close(held)
						_ = busy.BLPop(context.Background(), time.Second, f.prefix+":nothing").Err()
					}()
					for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
						if st := busy.PoolStats(); st.TotalConns == 1 && st.IdleConns == 0 {
							break
						}
						if time.Now().After(deadline) {
							t.Fatal("the blocking command never took the store's connection")
						}
					}

					err = store.Ping(context.Background())
					if gotErr := err != nil; gotErr != tt.wantErr {
						t.Errorf("Ping while the store's pool is taken = %v, want an error: %v", err, tt.wantErr)
					}
					<-held
				})
			}
		})
	}
}
