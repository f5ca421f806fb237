package adapter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

type passThroughObserver struct{}

func (passThroughObserver) Observe(ctx context.Context, op Op) (context.Context, Observation) {
	return ctx, passThroughObservation{}
}

type passThroughObservation struct{}

func (passThroughObservation) Phase(string, time.Time, time.Time) {}
func (passThroughObservation) End(Outcome, error)                 {}

type slotResultA struct {
	V int      `json:"v"`
	S []string `json:"s"`
}

// Two commands of different result types share the workers' result slots
// (job.resultSlot switches between them), with and without an Observer
// that hands the run's own context on (so the slot is used under it);
// contexts kept by the command are read from goroutines, and passed to
// Adapter.Call, while later runs of their chunk begin (begin writes the
// deadline without the mutex). Every change is noticed and nothing else.
func TestRerunResultSlotAcrossTypesAndKeptContexts(t *testing.T) {
	for _, obs := range []bool{false, true} {
		t.Run(fmt.Sprint("observer=", obs), func(t *testing.T) {
			var opts []Option
			if obs {
				opts = append(opts, WithObserver(passThroughObserver{}))
			}
			a := Wrap(server.NewMCPServer("t", "1"), opts...)
			var va, vb atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			defer func() { close(stop); wg.Wait() }()
			keep := func(ctx context.Context) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						ctx.Deadline()
						_ = ctx.Err()
						_, _ = a.Call(ctx, "rb", kArgs{K: "z"})
						select {
						case <-ctx.Done():
						case <-stop:
						}
						return
					}
				}()
			}
			Live(a, "ra", "", func(ctx context.Context, args kArgs) (slotResultA, error) {
				Reads(ctx, "k")
				keep(ctx)
				v := int(va.Load())
				return slotResultA{V: v, S: []string{args.K, fmt.Sprint(v)}}, nil
			})
			Live(a, "rb", "", func(ctx context.Context, args kArgs) (string, error) {
				Reads(ctx, "k")
				return fmt.Sprint(args.K, vb.Load()), nil
			})
			const n = 30
			c := newFakeClient(t, a, "s1", 10*n)
			for i := range n {
				if err := c.subscribe(fmt.Sprintf("app://ra/%d", i)); err != nil {
					t.Fatal(err)
				}
				if err := c.subscribe(fmt.Sprintf("app://rb/%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			drain := func() int {
				k := 0
				for {
					select {
					case <-c.s.ch:
						k++
					default:
						return k
					}
				}
			}
			drain()
			for round := range 20 {
				want := 0
				switch round % 3 {
				case 0:
					va.Add(1)
					want = n
				case 1:
					vb.Add(1)
					want = n
				}
				before := a.LiveStats().Notified
				a.Changed("k")
				waitIdle(t, a)
				if got := int(a.LiveStats().Notified - before); got != want {
					t.Fatalf("round %d: %d notified, want %d", round, got, want)
				}
				drain()
			}
		})
	}
}
