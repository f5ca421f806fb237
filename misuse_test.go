package adapter

import (
	"context"
	"testing"
	"time"
)

// A second Close after the first has returned finds nothing left to wait
// for: it answers nil whatever its ctx, as the first did, instead of a
// coin toss between the first's end and ctx's (both ready).
func TestMisuseCloseAgainAfterCloseReturned(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tc := range []struct {
		name   string
		second context.Context
	}{
		{"background", context.Background()},
		{"expired", expired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newLiveServer(t, newItemStore(2))
			if err := a.Close(context.Background()); err != nil {
				t.Fatalf("first Close: %v", err)
			}
			// select picks at random among ready cases: enough tries
			// that a coin toss shows.
			for i := range 64 {
				if err := a.Close(tc.second); err != nil {
					t.Fatalf("Close #%d after the first returned nil: %v", i+2, err)
				}
			}
		})
	}
}
