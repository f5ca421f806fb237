package fleet

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// customerCount is how many customers the example seeds
	// (examples/customers/seed.go); the test checks it before it starts.
	customerCount = 60
	// subsPerSession URIs per session: showPerSession of them
	// app://customers_show/{id}, searchPerSession customers_index searches,
	// the rest orders_between windows.
	subsPerSession   = 20
	showPerSession   = 10
	searchPerSession = 2
)

// sessionURIs returns the URIs session number n subscribes to, given the
// customers' names as seeded. Like a dashboard, it watches a window of
// showPerSession consecutive customers (app://customers_show/{id}, the
// window wrapping round after the last customer); searches by name for
// the first and the last of them (app://customers_index?search=...),
// which a write of either changes, since its name keeps the seeded words;
// and lists the orders of eight four-week windows
// (app://orders_between/{from}/{to}), which no write of the run changes
// (the writes change customers) but which every client must hold again
// after it reconnects. The windows of the sessions start at every
// customer in turn.
//
// A write of a customer so notifies about 60 of 300 sessions (a sixth
// watch it, a thirtieth search for it): at 20 writes/s, 1,200
// notifications and re-reads a second, all of them through the balancer
// and on PostgreSQL, which the 2 cores the whole fleet shares with its
// clients keep up with. Watching a page of customers_index instead, which
// a third of the writes change, would send each session several times
// that.
func sessionURIs(n int, names map[int64]string) []string {
	first := (n * 7) % customerCount // 7 is prime to 60: every start
	uris := make([]string, 0, subsPerSession)
	id := func(k int) int64 { return int64(1 + (first+k)%customerCount) }
	for k := range showPerSession {
		uris = append(uris, showURI(id(k)))
	}
	uris = append(uris, searchURI(names[id(0)]), searchURI(names[id(showPerSession-1)]))
	for k := range subsPerSession - showPerSession - searchPerSession {
		uris = append(uris, ordersURI((n+13*k)%100))
	}
	return uris
}

// ordersURI lists the orders of the four weeks from week w after the
// first customer joined (the seed's orders span about a hundred weeks).
func ordersURI(w int) string {
	from := time.Date(2023, time.January, 2, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*w)
	return "app://orders_between/" + from.Format(time.DateOnly) + "/" + from.AddDate(0, 0, 27).Format(time.DateOnly)
}

// searchURI is the customers_index search for term, percent-encoded as
// a URI's query (a space as %20: the adapter takes '+' literally).
func searchURI(term string) string {
	return "app://customers_index?search=" + strings.ReplaceAll(url.QueryEscape(term), "+", "%20")
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

// A change is one write of a customer, through an instance's
// customers_update tool or straight into the database: a name and an email
// no earlier write gave anyone, so that every write changes what the
// customer's URI reads.
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
	names := make(map[int64]string)
	for id := int64(1); id <= customerCount; id++ {
		names[id] = fmt.Sprintf("Näme %d", id)
	}
	watchers := make(map[int64]int)
	for n := range 300 {
		uris := sessionURIs(n, names)
		seen := make(map[string]bool)
		shows := 0
		for _, u := range uris {
			if seen[u] {
				t.Fatalf("session %d subscribes to %s twice", n, u)
			}
			seen[u] = true
			if id, ok := showID(u); ok {
				shows++
				watchers[id]++
				if id < 1 || id > customerCount {
					t.Fatalf("session %d watches customer %d, not one of the %d", n, id, customerCount)
				}
			}
		}
		if len(uris) != subsPerSession || shows != showPerSession {
			t.Fatalf("session %d: %d URIs, %d of customers_show; want %d and %d", n, len(uris), shows, subsPerSession, showPerSession)
		}
	}
	// 300 sessions spread their windows evenly: each customer is watched
	// by 300 * 10 / 60 of them.
	for id := int64(1); id <= customerCount; id++ {
		if watchers[id] != 50 {
			t.Errorf("customer %d is watched by %d sessions, want 50", id, watchers[id])
		}
	}
	// Session 8 starts at customer 57 (8*7 = 56) and wraps round: 57 to
	// 60, then 1 to 6.
	uris := sessionURIs(8, names)
	if uris[0] != showURI(57) || uris[3] != showURI(60) || uris[4] != showURI(1) || uris[showPerSession-1] != showURI(6) {
		t.Errorf("session 8 watches %q, want customers 57 to 60 and 1 to 6", uris[:showPerSession])
	}
	want := []string{"app://customers_index?search=N%C3%A4me%2057", "app://customers_index?search=N%C3%A4me%206"}
	if got := uris[showPerSession : showPerSession+searchPerSession]; !slices.Equal(got, want) {
		t.Errorf("session 8 searches %q, want %q", got, want)
	}
	if got := uris[showPerSession+searchPerSession]; got != "app://orders_between/2023-02-27/2023-03-26" {
		t.Errorf("session 8's first orders window is %s, want app://orders_between/2023-02-27/2023-03-26", got)
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
