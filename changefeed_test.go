package adapter

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// blockingFeed is a ChangeFeed whose Publish waits for release, recording
// what it was given.
type blockingFeed struct {
	started chan struct{} // one value per Publish that began
	release chan struct{}
	mu      sync.Mutex
	batches [][]string
}

func newBlockingFeed() *blockingFeed {
	return &blockingFeed{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (f *blockingFeed) Attach(ChangeSink) {}

func (f *blockingFeed) Publish(ctx context.Context, keys []string) error {
	f.mu.Lock()
	f.batches = append(f.batches, keys)
	f.mu.Unlock()
	f.started <- struct{}{}
	select {
	case <-f.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *blockingFeed) published() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// pilingUp wraps a server with feed, whose Publish hangs until released,
// and changes one key: its Publish starts and hangs, and the keys of the
// changes after it pile up.
func pilingUp(feed ChangeFeed, started <-chan struct{}, opts ...Option) *Adapter {
	a := Wrap(server.NewMCPServer("t", "1"), append([]Option{WithChangeFeed(feed)}, opts...)...)
	a.Changed("customers/1")
	<-started
	return a
}

// closeWithin closes a within 10 s, failing the test if it cannot.
func closeWithin(t *testing.T, a *Adapter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestChangedDoesNotWaitForTheFeed: while the feed's Publish hangs, Changed
// keeps returning; what piles up coalesces, and beyond the bound row keys
// widen to their tables, so the next batch is small; WaitIdle and Close
// wait for the publishing.
func TestChangedDoesNotWaitForTheFeed(t *testing.T) {
	feed := newBlockingFeed()
	a := Wrap(server.NewMCPServer("t", "1"), WithChangeFeed(feed))
	a.Changed("customers/1")
	<-feed.started // the first Publish hangs from now on

	// If Changed waited for the feed, this would not return before release.
	for i := range 2 * maxPendingKeys {
		a.Changed(fmt.Sprintf("customers/%d", i), fmt.Sprintf("orders/%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.WaitIdle(ctx); err == nil {
		t.Fatal("WaitIdle returned while the feed was publishing")
	}

	close(feed.release)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle after the feed answered: %v", err)
	}
	got := feed.published()
	if len(got) != 2 {
		t.Fatalf("%d batches published, want the first and one for all the rest", len(got))
	}
	if !slices.Equal(got[1], []string{"customers", "orders"}) {
		t.Fatalf("the %d keys that piled up were published as %d keys, want them widened to their tables", 4*maxPendingKeys, len(got[1]))
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	a.Changed("customers/9") // after Close: nothing
	if len(feed.published()) != 2 {
		t.Fatal("Changed published after Close")
	}
}

// TestWideningKeepsKeysWithoutTable: a key with an empty table ("/x") has
// nothing wider to go as. Widened to "", which every sink ignores, its
// change would reach no other instance.
func TestWideningKeepsKeysWithoutTable(t *testing.T) {
	feed := newBlockingFeed()
	a := pilingUp(feed, feed.started)

	a.Changed("/x")
	for i := range 2 * maxPendingKeys {
		a.Changed(fmt.Sprintf("customers/%d", i))
	}
	a.Changed("/y") // after the widening
	close(feed.release)
	closeWithin(t, a)
	got := feed.published()
	if last := got[len(got)-1]; len(got) != 2 || !slices.Equal(last, []string{"/x", "/y", "customers"}) {
		t.Fatalf("published %d batches, the last of %d keys beginning %q; want the rest as [/x /y customers]", len(got), len(last), last[:min(len(last), 3)])
	}
}

// TestWideningAFloodOfTablesIsNotQuadratic: keys that name tables only do
// not widen, so a flood of them keeps the pending set over the bound. Had
// every Changed beyond it widened the whole set again, 20,000 such keys
// would have cost 10,000 passes over 10,000 keys; the bound doubles after
// each widening instead. Every key is still published.
func TestWideningAFloodOfTablesIsNotQuadratic(t *testing.T) {
	feed := newBlockingFeed()
	a := pilingUp(feed, feed.started)

	const tables = 2 * maxPendingKeys
	for i := range tables {
		a.Changed(fmt.Sprintf("t%d", i))
	}
	p := a.live.pub
	p.mu.Lock()
	widenings := p.widenings
	p.mu.Unlock()
	if widenings > 1 {
		t.Errorf("%d distinct tables widened the pending set %d times, want once (then at twice its size)", tables, widenings)
	}
	close(feed.release)
	closeWithin(t, a)
	got := feed.published()
	if len(got) != 2 || len(got[1]) != tables {
		t.Fatalf("published %d batches, the last of %d keys; want the %d tables in one", len(got), len(got[len(got)-1]), tables)
	}
}

// allFeed is a blockingFeed that can also publish everything: a
// ChangeFeedAll. Its PublishAll records a nil batch.
type allFeed struct{ *blockingFeed }

func (f allFeed) PublishAll(ctx context.Context) error { return f.Publish(ctx, nil) }

// TestAFloodOfTablesBecomesOnePublishAll: with a feed that can say
// "everything changed", the keys that cannot widen (tables) are given up,
// past the bound, for one PublishAll, which covers them and every key that
// comes until it is sent: the pending set no longer grows with the flood.
// Keys that come after the PublishAll was sent go in a batch of their own.
func TestAFloodOfTablesBecomesOnePublishAll(t *testing.T) {
	feed := allFeed{newBlockingFeed()}
	a := pilingUp(feed, feed.started)

	for i := range 3 * maxPendingKeys {
		a.Changed(fmt.Sprintf("t%d", i))
	}
	p := a.live.pub
	p.mu.Lock()
	all, pending := p.all, len(p.pending)
	p.mu.Unlock()
	if !all || pending > maxPendingKeys {
		t.Fatalf("after %d distinct tables: all %v, %d keys pending; want one PublishAll waiting and at most %d keys", 3*maxPendingKeys, all, pending, maxPendingKeys)
	}

	feed.release <- struct{}{} // the first Publish returns
	<-feed.started             // PublishAll, hanging in its turn
	a.Changed("late")          // after PublishAll was sent: a batch of its own
	close(feed.release)
	closeWithin(t, a)
	got := feed.published()
	if len(got) != 3 || got[1] != nil || !slices.Equal(got[2], []string{"late"}) {
		t.Fatalf("published %d batches %.60q; want [customers/1], PublishAll (nil), [late]", len(got), got)
	}
}

// TestCloseFlushesThePublisher: keys handed to the feed before Close are
// published before Close returns.
func TestCloseFlushesThePublisher(t *testing.T) {
	feed := newBlockingFeed()
	close(feed.release) // answers at once
	a := Wrap(server.NewMCPServer("t", "1"), WithChangeFeed(feed))
	a.Changed("customers/1")
	a.Changed("customers/2")
	closeWithin(t, a)
	var keys []string
	for _, b := range feed.published() {
		keys = append(keys, b...)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"customers/1", "customers/2"}) {
		t.Fatalf("published %v before Close returned", keys)
	}
}

// panickyFeed's first Publish panics; the others record their keys.
type panickyFeed struct {
	mu    sync.Mutex
	calls int
	got   [][]string
}

func (f *panickyFeed) Attach(ChangeSink) {}

func (f *panickyFeed) Publish(_ context.Context, keys []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == 1 {
		panic("Publish")
	}
	f.got = append(f.got, keys)
	return nil
}

// A feed whose Publish panics fails that call, logged; the publisher runs
// on the adapter's goroutine, where the panic ended the process, and goes
// on with the next keys.
func TestPublishThatPanicsFailsAlone(t *testing.T) {
	feed := &panickyFeed{}
	a := Wrap(server.NewMCPServer("t", "1"), WithChangeFeed(feed), WithLogger(slog.New(slog.DiscardHandler)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.Changed("customers/1")
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	a.Changed("customers/2")
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	feed.mu.Lock()
	defer feed.mu.Unlock()
	if len(feed.got) != 1 || !slices.Equal(feed.got[0], []string{"customers/2"}) {
		t.Errorf("published after the panic: %v, want [[customers/2]]", feed.got)
	}
}

// panickyAllFeed is a blockingFeed whose PublishAll panics.
type panickyAllFeed struct{ *blockingFeed }

func (panickyAllFeed) PublishAll(context.Context) error { panic("feed bug") }

// TestPublishAllThatPanicsFailsAlone: a PublishAll that panics fails, logged,
// as a Publish that panics does; the publisher goes on with later keys.
func TestPublishAllThatPanicsFailsAlone(t *testing.T) {
	feed := panickyAllFeed{newBlockingFeed()}
	a := pilingUp(feed, feed.started, WithLogger(slog.New(slog.DiscardHandler)))
	for i := range 2 * maxPendingKeys {
		a.Changed(fmt.Sprintf("t%d", i))
	}
	close(feed.release) // then PublishAll panics
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	a.Changed("late")
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	got := feed.published()
	if len(got) != 2 || !slices.Equal(got[1], []string{"late"}) {
		t.Fatalf("published %.60q; want [customers/1] and, after the panic, [late]", got)
	}
}
