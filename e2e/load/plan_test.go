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
	// subsPerSession URIs per session, showPerSession of them
	// app://customers_show/{id}, the rest customers_index queries.
	subsPerSession = 20
	showPerSession = 17
	// pageSize is the size of the customers_index pages sessions watch.
	pageSize = 20
)

// sessionURIs returns the URIs session number n subscribes to. Like a
// dashboard, it watches a window of showPerSession consecutive customers
// (app://customers_show/{id}) and the page of customers_index, by join
// date (which is id order), that lists the first of them, spelled three
// ways, as three widgets of one screen might spell it. The spellings are
// three subscriptions that share one re-run (the specification's "two
// URIs spelling the same arguments differently"), so a write to a
// customer on the page sends the session three notifications at once,
// while it re-reads: the burst that mcp-go's per-POST forwarder is most
// likely to take and drop. The windows of the sessions start at every
// customer in turn.
func sessionURIs(n int) []string {
	first := 1 + (n*7)%(customerCount-showPerSession+1) // 7 is prime to 44: every start
	uris := make([]string, 0, subsPerSession)
	for id := first; id < first+showPerSession; id++ {
		uris = append(uris, showURI(int64(id)))
	}
	page := (first-1)/pageSize + 1
	return append(uris,
		fmt.Sprintf("app://customers_index?sort=created_at&per_page=%d&page=%d", pageSize, page),
		fmt.Sprintf("app://customers_index?page=%d&per_page=%d&sort=created_at", page, pageSize),
		fmt.Sprintf("app://customers_index?per_page=%d&page=%d&sort=created_at", pageSize, page),
	)
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
	for n := range 200 {
		uris := sessionURIs(n)
		seen := make(map[string]bool)
		shows := 0
		for _, u := range uris {
			if seen[u] {
				t.Fatalf("session %d subscribes to %s twice", n, u)
			}
			seen[u] = true
			if id, ok := showID(u); ok {
				shows++
				if id < 1 || id > customerCount {
					t.Fatalf("session %d watches customer %d, not one of the %d", n, id, customerCount)
				}
			}
		}
		if len(uris) != subsPerSession || shows != showPerSession {
			t.Fatalf("session %d: %d URIs, %d of customers_show; want %d and %d", n, len(uris), shows, subsPerSession, showPerSession)
		}
	}
	// Session 1 watches customers 8 to 24, and the first page of 20 by
	// join date (customers 1 to 20), which lists customer 8.
	wantIndex := []string{
		"app://customers_index?sort=created_at&per_page=20&page=1",
		"app://customers_index?page=1&per_page=20&sort=created_at",
		"app://customers_index?per_page=20&page=1&sort=created_at",
	}
	uris := sessionURIs(1)
	if got := uris[showPerSession:]; !slices.Equal(got, wantIndex) {
		t.Errorf("session 1 lists %q, want %q", got, wantIndex)
	}
	if uris[0] != showURI(8) || uris[showPerSession-1] != showURI(24) {
		t.Errorf("session 1 shows %s to %s, want customers 8 to 24", uris[0], uris[showPerSession-1])
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
