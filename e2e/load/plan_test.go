package load

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

const (
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
	starts := loadkit.CustomerCount - p.show + 1
	first := 1 + (n*windowStride(starts))%starts
	uris := make([]string, 0, p.perSession())
	for id := first; id < first+p.show; id++ {
		uris = append(uris, loadkit.ShowURI(int64(id)))
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
				if id, ok := loadkit.ShowID(u); ok {
					shows++
					if id < 1 || id > loadkit.CustomerCount {
						t.Fatalf("plan %d, session %d watches customer %d, not one of the %d", per, n, id, loadkit.CustomerCount)
					}
				}
			}
			if len(uris) != per || shows != p.show {
				t.Fatalf("plan %d, session %d: %d URIs, %d of customers_show; want %d and %d", per, n, len(uris), shows, per, p.show)
			}
			starts[uris[0]] = true
		}
		if want := loadkit.CustomerCount - p.show + 1; len(starts) != want {
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
	if uris[0] != loadkit.ShowURI(8) || uris[p.show-1] != loadkit.ShowURI(24) {
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
	if uris[0] != loadkit.ShowURI(8) || uris[p.show-1] != loadkit.ShowURI(52) {
		t.Errorf("plan 50, session 1 shows %s to %s, want customers 8 to 52", uris[0], uris[p.show-1])
	}
}
