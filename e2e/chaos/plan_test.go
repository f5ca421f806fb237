package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

const (
	// customerCount is how many customers the example seeds
	// (examples/customers/seed.go); the test checks it before it starts.
	customerCount = 60
	// watched are the customers the writes rename, 1 to watched; each
	// client watches perClient consecutive ones of them.
	watched   = 20
	perClient = 8
)

// clientURIs are the URIs client n watches: perClient consecutive
// customers of the watched ones, from the 7n-th on (7 is prime to 20:
// the clients start everywhere), wrapping round.
func clientURIs(n int) []string {
	uris := make([]string, perClient)
	for k := range uris {
		uris[k] = loadkit.ShowURI(int64(1 + (n*7+k)%watched))
	}
	return uris
}

// A change renames one customer.
type change struct {
	id   int64
	name string
}

// writePlan is n renames of the watched customers: in rounds of watched
// writes, each round every customer once, in an order drawn from rng, so
// that a customer's writes are a round apart on average but sometimes
// back to back. Every name is new.
func writePlan(n int, rng *rand.Rand) []change {
	plan := make([]change, 0, n)
	order := make([]int64, watched)
	for i := range order {
		order[i] = int64(i + 1)
	}
	for len(plan) < n {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, id := range order {
			if len(plan) == n {
				break
			}
			plan = append(plan, change{id: id, name: fmt.Sprintf("Chaos %d.%d", id, len(plan))})
		}
	}
	return plan
}

// finalNames is the name each watched URI shows after plan, by URI.
func finalNames(plan []change) map[string]string {
	final := make(map[string]string, watched)
	for _, ch := range plan {
		final[loadkit.ShowURI(ch.id)] = ch.name
	}
	return final
}

func TestPlan(t *testing.T) {
	plan := writePlan(3*watched+5, rand.New(rand.NewPCG(1, 2)))
	if len(plan) != 3*watched+5 {
		t.Fatalf("%d writes, want %d", len(plan), 3*watched+5)
	}
	seen := make(map[string]bool)
	for i, ch := range plan {
		if ch.id < 1 || ch.id > watched {
			t.Errorf("write %d renames customer %d, not one of the %d watched", i, ch.id, watched)
		}
		if seen[ch.name] {
			t.Errorf("write %d reuses the name %q", i, ch.name)
		}
		seen[ch.name] = true
	}
	for r := range 3 {
		ids := make([]int64, 0, watched)
		for _, ch := range plan[r*watched : (r+1)*watched] {
			ids = append(ids, ch.id)
		}
		slices.Sort(ids)
		if len(slices.Compact(ids)) != watched {
			t.Errorf("round %d does not rename every watched customer once: %v", r, ids)
		}
	}
	final := finalNames(plan)
	if len(final) != watched || final[loadkit.ShowURI(plan[len(plan)-1].id)] != plan[len(plan)-1].name {
		t.Errorf("finalNames = %v: want every watched customer, the last write's name for its customer", final)
	}
	// Every watched customer is watched by some client, wrapping round.
	covered := make(map[string]bool)
	for n := range 3 {
		uris := clientURIs(n)
		if len(uris) != perClient {
			t.Fatalf("client %d watches %d URIs, want %d", n, len(uris), perClient)
		}
		for _, u := range uris {
			id, ok := loadkit.ShowID(u)
			if !ok || id < 1 || id > watched {
				t.Errorf("client %d watches %q, not a watched customer", n, u)
			}
			covered[u] = true
		}
	}
	if len(covered) != watched {
		t.Errorf("3 clients watch %d customers, want all %d", len(covered), watched)
	}
}
