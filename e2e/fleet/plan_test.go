package fleet

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
)

const (
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
	first := (n * 7) % loadkit.CustomerCount // 7 is prime to 60: every start
	uris := make([]string, 0, subsPerSession)
	id := func(k int) int64 { return int64(1 + (first+k)%loadkit.CustomerCount) }
	for k := range showPerSession {
		uris = append(uris, loadkit.ShowURI(id(k)))
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

func TestSessionURIs(t *testing.T) {
	names := make(map[int64]string)
	for id := int64(1); id <= loadkit.CustomerCount; id++ {
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
			if id, ok := loadkit.ShowID(u); ok {
				shows++
				watchers[id]++
				if id < 1 || id > loadkit.CustomerCount {
					t.Fatalf("session %d watches customer %d, not one of the %d", n, id, loadkit.CustomerCount)
				}
			}
		}
		if len(uris) != subsPerSession || shows != showPerSession {
			t.Fatalf("session %d: %d URIs, %d of customers_show; want %d and %d", n, len(uris), shows, subsPerSession, showPerSession)
		}
	}
	// 300 sessions spread their windows evenly: each customer is watched
	// by 300 * 10 / 60 of them.
	for id := int64(1); id <= loadkit.CustomerCount; id++ {
		if watchers[id] != 50 {
			t.Errorf("customer %d is watched by %d sessions, want 50", id, watchers[id])
		}
	}
	// Session 8 starts at customer 57 (8*7 = 56) and wraps round: 57 to
	// 60, then 1 to 6.
	uris := sessionURIs(8, names)
	if uris[0] != loadkit.ShowURI(57) || uris[3] != loadkit.ShowURI(60) || uris[4] != loadkit.ShowURI(1) || uris[showPerSession-1] != loadkit.ShowURI(6) {
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
