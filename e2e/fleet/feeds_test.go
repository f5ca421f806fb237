package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcplive/adapter/e2e/internal/exampleproc"
)

// The instances' change feeds, as their /healthz/feed and the database
// tell them once the run is over.

// feedHealth is what the test reads of an instance's /healthz/feed (the
// JSON of pgfeed.Health; this module does not import pgfeed).
type feedHealth struct {
	Source     string `json:"source"`
	Connected  bool   `json:"connected"`
	Slot       string `json:"slot"`
	Reconnects int    `json:"reconnects"`
	Fallbacks  int    `json:"fallbacks"`
	Received   int64  `json:"received"`
}

// feedState is the survivors' feeds, and, for WAL, the replication slots
// of the database: the killed instance's is left, unused, holding the log
// written since it died, until the survivors drop it (after five minutes
// unused, longer than the run).
type feedState struct {
	survivors []feedHealth
	// slots in use and not; retained is the log the unused ones hold.
	active, unused int
	retained       int64
	err            error
}

func (s feedState) String() string {
	var b strings.Builder
	for i, h := range s.survivors {
		fmt.Fprintf(&b, "feed[%d]=%s connected=%v reconnects=%d fallbacks=%d received=%d ", i, h.Source, h.Connected, h.Reconnects, h.Fallbacks, h.Received)
	}
	fmt.Fprintf(&b, "slots active=%d unused=%d (retaining %d bytes of WAL)", s.active, s.unused, s.retained)
	if s.err != nil {
		fmt.Fprintf(&b, " error=%v", s.err)
	}
	return b.String()
}

// feedStates asks the surviving instances and the database.
func feedStates(t *testing.T, ctx context.Context, insts []*exampleproc.Process, db *pgxpool.Pool, feed string) feedState {
	t.Helper()
	var s feedState
	for i, inst := range insts {
		if i == victim {
			continue
		}
		h, err := readFeedHealth(ctx, inst.URL)
		if err != nil {
			s.err = err
		}
		s.survivors = append(s.survivors, h)
	}
	err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE active), count(*) FILTER (WHERE NOT active),
		coalesce(sum(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) FILTER (WHERE NOT active), 0)::bigint
		FROM pg_replication_slots WHERE database = current_database()`).Scan(&s.active, &s.unused, &s.retained)
	if err != nil {
		s.err = err
	}
	return s
}

func readFeedHealth(ctx context.Context, url string) (feedHealth, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	healthURL := strings.TrimSuffix(url, "/mcp") + "/healthz/feed"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthURL, nil)
	if err != nil {
		return feedHealth{}, err
	}
	resp, err := directClient.Do(req)
	if err != nil {
		return feedHealth{}, err
	}
	defer resp.Body.Close()
	var h feedHealth
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return h, fmt.Errorf("GET %s: %w", healthURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("GET %s: status %d", healthURL, resp.StatusCode)
	}
	return h, nil
}

// judgeFeeds checks that the survivors' feeds never lost track: connected
// all along, on the feed asked for, and, on WAL, with one slot each in use
// and the killed instance's left unused.
func judgeFeeds(t *testing.T, s feedState, feed string) {
	t.Helper()
	if s.err != nil {
		t.Errorf("the feeds' state: %v", s.err)
	}
	for i, h := range s.survivors {
		if h.Source != feed || !h.Connected || h.Reconnects != 0 || h.Fallbacks != 0 || h.Received == 0 {
			t.Errorf("surviving instance %d's feed: %+v; want %s, connected all along, having received changes", i, h, feed)
		}
	}
	slots := map[string]int{"notify": 0, "wal": instances - 1}[feed]
	unused := map[string]int{"notify": 0, "wal": 1}[feed]
	if s.active != slots || s.unused != unused {
		t.Errorf("replication slots: %d in use, %d unused; want %d and %d (the killed instance's)", s.active, s.unused, slots, unused)
	}
}

// durableCommits makes the server flush every commit before it returns,
// as PostgreSQL does by default (the throwaway server does not): a WAL
// feed reads only what is flushed, and would otherwise hear each write up
// to the WAL writer's delay (200 ms) late. fsync stays off: the commits
// wait for no disk.
func durableCommits(t *testing.T, url string) {
	t.Helper()
	db, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, sql := range []string{`ALTER SYSTEM SET synchronous_commit = on`, `SELECT pg_reload_conf()`} {
		if _, err := db.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
}
