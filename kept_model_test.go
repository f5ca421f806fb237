package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter/internal/draw"
)

// The freshness model of kept results: writers, readers and subscribers
// run at once, in two scopes, on both protocol versions, while re-runs are
// under way (commands yield and pause at random, so that changes overtake
// runs). The model is one number per scope and item, raised by every
// write before its Changed; after Changed returns, the write is "done".
// Every read must answer a number at least as new as the newest write done
// before the read began: no kept result older than the last Changed that
// completed before the read may answer it.
func TestKeptFreshnessModel(t *testing.T) {
	var answered uint64
	draw.ForEachSeed(t, checks/5, func(t *testing.T, c *draw.Choices) { answered += checkKeptFreshness(t, c) })
	if answered == 0 {
		t.Error("no read was answered from a kept result: the model proves nothing")
	}
	t.Logf("%d reads answered from kept results", answered)
}

const (
	freshItems   = 3
	freshWriters = 2
	freshReaders = 3
	freshWatches = 2
	freshSteps   = 40
)

var freshTenants = []string{"a", "b"}

// freshStore is the application's data: a number per tenant and item.
type freshStore struct {
	mu     sync.Mutex
	values map[string]*[freshItems + 1]int
}

func (s *freshStore) get(tenant string) [freshItems + 1]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.values[tenant]
}

// raise writes a new number for tenant's item id and returns it.
func (s *freshStore) raise(tenant string, id int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[tenant][id]++
	return s.values[tenant][id]
}

type freshShow struct {
	Tenant string `json:"tenant"`
	ID     int    `json:"id"`
	Value  int    `json:"value"`
}

type freshList struct {
	Tenant string `json:"tenant"`
	Values []int  `json:"values"`
}

// pauseFor holds a command for a while drawn by its own arguments and the
// time: enough that runs overlap changes, short enough to keep the test
// quick.
func pauseFor(n int64) {
	switch n % 4 {
	case 0:
	case 1:
		runtime.Gosched()
	default:
		time.Sleep(time.Duration(n%200) * time.Microsecond)
	}
}

func newFreshServer(t *testing.T, st *freshStore) *Adapter {
	a := Wrap(server.NewMCPServer("model", "1"), WithScope(tenantScope))
	var tick atomic.Int64
	// Its re-runs run in batches (WithBatch), of one tenant each.
	Live(a, "model_show", "One item.", func(ctx context.Context, args itemArgs) (freshShow, error) {
		Reads(ctx, fmt.Sprintf("items/%d", args.ID))
		tenant, _ := tenantOf(ctx)
		pauseFor(tick.Add(1))
		v := st.get(tenant)[args.ID]
		pauseFor(tick.Add(1)) // what it read may be overtaken now
		return freshShow{Tenant: tenant, ID: args.ID, Value: v}, nil
	}, WithBatch(func(ctx context.Context, args []itemArgs) ([]freshShow, error) {
		tenant, _ := tenantOf(ctx)
		out := make([]freshShow, len(args))
		for i, x := range args {
			ReadsAt(ctx, i, fmt.Sprintf("items/%d", x.ID))
		}
		pauseFor(tick.Add(1))
		vs := st.get(tenant)
		pauseFor(tick.Add(1))
		for i, x := range args {
			out[i] = freshShow{Tenant: tenant, ID: x.ID, Value: vs[x.ID]}
		}
		return out, nil
	}))
	Live(a, "model_list", "Every item.", func(ctx context.Context, _ struct{}) (freshList, error) {
		Reads(ctx, "items")
		tenant, _ := tenantOf(ctx)
		pauseFor(tick.Add(1))
		vs := st.get(tenant)
		pauseFor(tick.Add(1))
		return freshList{Tenant: tenant, Values: vs[1:]}, nil
	})
	return a
}

// freshOp is one step of a goroutine of the model.
type freshOp struct {
	id      int  // the item; 0 for the list
	modern  bool // a read of protocol 2026-07-28
	unwatch bool // a watcher's step: unsubscribe rather than subscribe
}

// checkKeptFreshness runs one case of the model and returns how many reads
// a kept result answered.
func checkKeptFreshness(t *testing.T, c *draw.Choices) uint64 {
	st := &freshStore{values: map[string]*[freshItems + 1]int{}}
	for _, tn := range freshTenants {
		st.values[tn] = new([freshItems + 1]int)
	}
	a := newFreshServer(t, st)
	// done[tenant][id] is the newest number whose Changed has returned.
	done := map[string]*[freshItems + 1]atomic.Int64{}
	for _, tn := range freshTenants {
		done[tn] = new([freshItems + 1]atomic.Int64)
	}
	uriOf := func(id int) string {
		if id == 0 {
			return "app://model_list"
		}
		return fmt.Sprintf("app://model_show/%d", id)
	}
	plan := func() []freshOp {
		ops := make([]freshOp, freshSteps)
		for i := range ops {
			ops[i] = freshOp{id: c.IntRange(0, freshItems), modern: c.Bool(), unwatch: c.Intn(3) == 0}
		}
		return ops
	}

	var wg sync.WaitGroup
	failed := make(chan string, 64)
	fail := func(format string, args ...any) {
		select {
		case failed <- fmt.Sprintf(format, args...):
		default:
		}
	}
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	for w := range freshWriters {
		tn, ops := freshTenants[w%len(freshTenants)], plan()
		f := newFakeClient(t, a, fmt.Sprintf("%s-write%d", tn, w), 16)
		run(func() {
			for _, op := range ops {
				id := max(op.id, 1)
				v := st.raise(tn, id)
				a.Changed(fmt.Sprintf("items/%d", id))
				for d := &done[tn][id]; ; {
					if old := d.Load(); old >= int64(v) || d.CompareAndSwap(old, int64(v)) {
						break
					}
				}
				// The writer reads its write back at once, as an agent
				// that wrote through a tool would: the re-run has most
				// likely not ended, and the kept result is stale.
				text, _, rerr := readAnswer(t, f, uriOf(id), op.modern)
				var s freshShow
				if rerr != nil || json.Unmarshal([]byte(text), &s) != nil || s.Value < v {
					fail("tenant %s wrote %d to item %d, then read %q, %+v", tn, v, id, text, rerr)
				}
			}
		})
	}
	for i := range freshWatches * len(freshTenants) {
		tn, ops := freshTenants[i%len(freshTenants)], plan()
		f := newFakeClient(t, a, fmt.Sprintf("%s-watch%d", tn, i), 4096)
		run(func() {
			for _, op := range ops {
				if op.unwatch {
					f.unsubscribe(uriOf(op.id))
				} else if e := f.subscribe(uriOf(op.id)); e != nil {
					fail("subscribe %s: %+v", uriOf(op.id), e)
				}
			}
		})
	}
	for i := range freshReaders * len(freshTenants) {
		tn, ops := freshTenants[i%len(freshTenants)], plan()
		f := newFakeClient(t, a, fmt.Sprintf("%s-read%d", tn, i), 16)
		run(func() {
			for _, op := range ops {
				var floor [freshItems + 1]int64
				for id := 1; id <= freshItems; id++ {
					floor[id] = done[tn][id].Load()
				}
				text, _, rerr := readAnswer(t, f, uriOf(op.id), op.modern)
				if rerr != nil {
					fail("read %s: %+v", uriOf(op.id), rerr)
					return
				}
				if op.id == 0 {
					var l freshList
					if err := json.Unmarshal([]byte(text), &l); err != nil || len(l.Values) != freshItems || l.Tenant != tn {
						fail("tenant %s read %s: %q", tn, uriOf(op.id), text)
						return
					}
					for id := 1; id <= freshItems; id++ {
						if int64(l.Values[id-1]) < floor[id] {
							fail("tenant %s read %s: item %d is %d, but write %d was done before the read began", tn, uriOf(0), id, l.Values[id-1], floor[id])
						}
					}
					continue
				}
				var s freshShow
				if err := json.Unmarshal([]byte(text), &s); err != nil || s.Tenant != tn {
					fail("tenant %s read %s: %q", tn, uriOf(op.id), text)
					return
				}
				if int64(s.Value) < floor[op.id] {
					fail("tenant %s read %s: %d, but write %d was done before the read began", tn, uriOf(op.id), s.Value, floor[op.id])
				}
			}
		})
	}
	wg.Wait()
	close(failed)
	for msg := range failed {
		t.Error(msg)
	}
	return a.LiveStats().KeptAnswers
}
