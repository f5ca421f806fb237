package load

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	// customerCount is how many customers the example seeds
	// (examples/customers/seed.go); the test checks it before it starts.
	customerCount = 60
	// pageSize is the size of the customers_index pages sessions watch.
	pageSize = 20
)

// A plan is what each session subscribes to: a window of show
// consecutive customers (app://customers_show/{id}) and index spellings
// of one customers_index page.
type plan struct{ show, index int }

// plans are the sessions' plans by how many URIs each watches: 20, 15 %
// of them index queries (the CI run's), and 50, 10 % of them.
var plans = map[int]plan{
	20: {show: 17, index: 3},
	50: {show: 45, index: 5},
}

// perSession is how many URIs a session of p watches.
func (p plan) perSession() int { return p.show + p.index }

// indexOrders are the orders in which an index spelling names its three
// parameters: each a different URI of the same query.
var indexOrders = [][3]string{
	{"sort", "per_page", "page"},
	{"page", "per_page", "sort"},
	{"per_page", "page", "sort"},
	{"sort", "page", "per_page"},
	{"page", "sort", "per_page"},
	{"per_page", "sort", "page"},
}

// sessionURIs returns the URIs session number n of plan p subscribes to.
// Like a dashboard, it watches a window of p.show consecutive customers
// (app://customers_show/{id}) and the page of customers_index, by join
// date (which is id order), that lists the first of them, spelled p.index
// ways, as several widgets of one screen might spell it. The spellings
// are subscriptions that share one re-run (the specification's "two URIs
// spelling the same arguments differently"), so a write to a customer on
// the page sends the session a burst of notifications at once, while it
// re-reads: the burst that mcp-go's per-POST forwarder is most likely to
// take and drop. The windows of the sessions start at every customer in
// turn.
func (p plan) sessionURIs(n int) []string {
	starts := customerCount - p.show + 1
	first := 1 + (n*windowStride(starts))%starts
	uris := make([]string, 0, p.perSession())
	for id := first; id < first+p.show; id++ {
		uris = append(uris, showURI(int64(id)))
	}
	page := (first-1)/pageSize + 1
	values := map[string]string{"sort": "created_at", "per_page": strconv.Itoa(pageSize), "page": strconv.Itoa(page)}
	for _, order := range indexOrders[:p.index] {
		q := make([]string, len(order))
		for i, name := range order {
			q[i] = name + "=" + values[name]
		}
		uris = append(uris, "app://customers_index?"+strings.Join(q, "&"))
	}
	return uris
}

// windowStride is a step, prime to starts, by which consecutive sessions'
// windows start far apart and yet at every customer in turn.
func windowStride(starts int) int {
	for s := 7; ; s++ {
		if gcd(s, starts) == 1 {
			return s
		}
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func showURI(id int64) string { return "app://customers_show/" + strconv.FormatInt(id, 10) }

// showID returns the customer of an app://customers_show/{id} URI.
func showID(uri string) (int64, bool) {
	rest, ok := strings.CutPrefix(uri, "app://customers_show/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil
}

// A change is one customers_update call: a name and an email no earlier
// write gave anyone, so that every write changes what the customer's URI
// reads.
type change struct {
	id          int64
	name, email string
}

// writePlan returns n changes that cycle through every customer, so that
// at 20 writes/s each customer changes every 3 s (customerCount/20): each
// change then stays the customer's last for 3 s, as the last write of the
// run does before the final check, and must be announced to every
// subscriber before the next. A name keeps its original words (names[id])
// so that it still reads as the person.
func writePlan(n int, names map[int64]string) []change {
	plan := make([]change, n)
	for i := range plan {
		id := int64(1 + i%customerCount)
		plan[i] = change{
			id:    id,
			name:  fmt.Sprintf("%s r%d", names[id], i),
			email: fmt.Sprintf("c%d.r%d@load.example", id, i),
		}
	}
	return plan
}

func TestSessionURIs(t *testing.T) {
	for per, p := range plans {
		starts := make(map[string]bool)
		for n := range 200 {
			uris := p.sessionURIs(n)
			seen := make(map[string]bool)
			shows := 0
			for _, u := range uris {
				if seen[u] {
					t.Fatalf("plan %d, session %d subscribes to %s twice", per, n, u)
				}
				seen[u] = true
				if id, ok := showID(u); ok {
					shows++
					if id < 1 || id > customerCount {
						t.Fatalf("plan %d, session %d watches customer %d, not one of the %d", per, n, id, customerCount)
					}
				}
			}
			if len(uris) != per || shows != p.show {
				t.Fatalf("plan %d, session %d: %d URIs, %d of customers_show; want %d and %d", per, n, len(uris), shows, per, p.show)
			}
			starts[uris[0]] = true
		}
		if want := customerCount - p.show + 1; len(starts) != want {
			t.Errorf("plan %d: windows start at %d customers, want every one of %d", per, len(starts), want)
		}
	}
	// Session 1 watches customers 8 to 24, and the first page of 20 by
	// join date (customers 1 to 20), which lists customer 8.
	wantIndex := []string{
		"app://customers_index?sort=created_at&per_page=20&page=1",
		"app://customers_index?page=1&per_page=20&sort=created_at",
		"app://customers_index?per_page=20&page=1&sort=created_at",
	}
	p := plans[20]
	uris := p.sessionURIs(1)
	if got := uris[p.show:]; !slices.Equal(got, wantIndex) {
		t.Errorf("session 1 lists %q, want %q", got, wantIndex)
	}
	if uris[0] != showURI(8) || uris[p.show-1] != showURI(24) {
		t.Errorf("session 1 shows %s to %s, want customers 8 to 24", uris[0], uris[p.show-1])
	}
	// With 50: customers 8 to 52, and the same page spelled five ways.
	p = plans[50]
	uris = p.sessionURIs(1)
	wantIndex = append(wantIndex,
		"app://customers_index?sort=created_at&page=1&per_page=20",
		"app://customers_index?page=1&sort=created_at&per_page=20")
	if got := uris[p.show:]; !slices.Equal(got, wantIndex) {
		t.Errorf("plan 50, session 1 lists %q, want %q", got, wantIndex)
	}
	if uris[0] != showURI(8) || uris[p.show-1] != showURI(52) {
		t.Errorf("plan 50, session 1 shows %s to %s, want customers 8 to 52", uris[0], uris[p.show-1])
	}
}

func TestWritePlan(t *testing.T) {
	names := make(map[int64]string)
	for id := int64(1); id <= customerCount; id++ {
		names[id] = fmt.Sprintf("Name %d", id)
	}
	plan := writePlan(400, names)
	seen := make(map[string]bool)
	for i, ch := range plan {
		// Each customer comes round again customerCount writes later, so
		// each change stays its customer's last for that long.
		if want := int64(1 + i%customerCount); ch.id != want {
			t.Fatalf("write %d changes customer %d, want %d", i, ch.id, want)
		}
		if seen[ch.name] || seen[ch.email] {
			t.Fatalf("write %d repeats a name or an email: %q, %q", i, ch.name, ch.email)
		}
		seen[ch.name], seen[ch.email] = true, true
		if !strings.HasPrefix(ch.name, names[ch.id]+" ") {
			t.Errorf("write %d names customer %d %q, which does not keep %q", i, ch.id, ch.name, names[ch.id])
		}
	}
}
