package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// Close ends what the adapter started, for an orderly shutdown. From the
// moment it is called the adapter takes no new subscription (a listen does
// not acknowledge the URIs of live commands, resources/subscribe answers
// -32600), Changed does nothing, and no queued re-run starts. Then Close
//
//  1. lets the re-runs under way finish and delivers what they found,
//     and the notifications WithNotifyInterval delayed, to the clients
//     that take it, until ctx ends (a client that does not
//     read its notifications holds up nothing: through HTTPHandler, a
//     write into a legacy GET stream that its client does not take within
//     a second fails from now on); at ctx's end it cancels
//     the contexts of the re-runs still running;
//  2. ends every subscription: a subscriptions/listen request ends on the
//     wire with its result, as when the client cancels it (through
//     HTTPHandler, ServeStdio, HandleMessage and the in-process client;
//     through HTTPHandler, the writes into a stream whose client stopped
//     reading are cut short at ctx's end);
//     resources/subscribe subscriptions are dropped, since the transport
//     can tell their sessions nothing, and every write into a legacy GET
//     stream through HTTPHandler, mcp-go's included, fails from then on,
//     on the streams opened since as on those open then;
//  3. stops publishing to the change feed, once the keys already given to
//     it are published, and stops taking changes from it (the feed itself,
//     and its connection, are yours to close, after Close);
//  4. waits until none of its goroutines is left.
//
// It returns nil when all that is done, and an error wrapping ctx's when
// ctx ended first (re-runs were cancelled, or are still running); a
// command that ignores its context's cancellation can outlast Close.
// Reads and tools/calls keep working: they run in the requests of the
// transport, which has its own shutdown. Call Close after
// the HTTP server's Shutdown (or when ServeStdio has returned), so that no
// request is left to subscribe. A second call waits like the first.
func (a *Adapter) Close(ctx context.Context) error {
	if ctx == nil {
		panic("adapter: Close: nil context")
	}
	r := a.live
	if !r.beginClose() {
		// A second call waits like the first: until the first is done.
		// Once it is, ctx's end does not matter (select would pick at
		// random between the two when both are ready).
		select {
		case <-r.closeDone:
		default:
			select {
			case <-r.closeDone:
			case <-ctx.Done():
				return fmt.Errorf("adapter: Close: live work still under way: %w", ctx.Err())
			}
		}
		return r.waitGone(ctx)
	}
	defer close(r.closeDone)
	// Nothing is delayed from now on: what was goes out with the rest.
	r.releaseDelayed()
	if r.pub != nil {
		r.pub.close()
	}
	// Step 1 is over when no re-run runs and every delivery left waits
	// for a client that does not read: ending the subscriptions (step 2)
	// is what frees those. A delivery writing into a GET stream is not
	// waiting but writing, for as long as the stream's write timeout;
	// from now on a write there that the client does not take within
	// closeWriteGrace fails, and the delivery ends.
	r.gets.shortenAllDeadlines()
	settled := r.waitFor(ctx, func() bool { return r.workers == 0 && r.deliverers.Load() == r.waiting.Load() })
	if settled != nil {
		r.cancelQueries()
	}
	a.endListenRequests(ctx, r.endAll())
	r.gets.abortAll()
	if err := r.waitGone(ctx); err != nil || settled == nil {
		return err
	}
	return fmt.Errorf("adapter: Close: re-runs still running at the deadline were cancelled: %w", settled)
}

// beginClose marks the registry closed; false when it already was.
func (r *liveRegistry) beginClose() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.closed = true
	r.closing.Store(true)
	r.signalLocked()
	return true
}

// cancelQueries cancels the context of every query, so that the re-runs
// still running stop early.
func (r *liveRegistry) cancelQueries() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.queries {
		if q.run != nil {
			q.run.cancel()
		}
	}
}

// endAll ends every subscription and frees every connection's delivery,
// and returns the listen streams it ended, to be ended on the wire.
func (r *liveRegistry) endAll() []*stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	var listens []*stream
	for _, c := range r.conns {
		for s := range c.streams {
			listens = append(listens, s)
			r.endStreamLocked(s)
		}
		if c.legacy != nil {
			c.legacy.ended = true
			for _, sb := range c.legacy.subs {
				r.removeSubLocked(sb)
			}
		}
		if !c.closed {
			// Frees a delivery waiting for a session that no one reads.
			c.closed = true
			close(c.done)
		}
		r.maybeDropConnLocked(c)
	}
	return listens
}

// waitGone waits until no goroutine of the registry is left.
func (r *liveRegistry) waitGone(ctx context.Context) error {
	err := r.waitFor(ctx, func() bool {
		return r.workers == 0 && r.deliverers.Load() == 0 && r.pacer.fires == 0 && (r.pub == nil || !r.pub.busy())
	})
	if err != nil {
		return fmt.Errorf("adapter: Close: live work still under way: %w", err)
	}
	return nil
}

// endListenRequests ends the subscriptions/listen requests of the streams
// that Close ended. A client that stops reading its stream holds up
// mcp-go's write into it, and the answer written after it, for as long as
// the connection lasts: at ctx's end, the writes still under way into the
// edge's responses are cut short, so that Close returns.
func (a *Adapter) endListenRequests(ctx context.Context, listens []*stream) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, s := range listens {
			a.endListenRequest(s)
		}
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	for _, s := range listens {
		if s.closer != nil && s.closer.edge != nil {
			s.closer.edge.abort()
		}
	}
	<-done
}

// endListenRequest ends the subscriptions/listen request of a stream that
// Close ended: through the HTTP edge's closer, which answers the request
// itself, or else the way a client cancels it, with
// notifications/cancelled on its session, which makes mcp-go answer it.
// (Over stateless HTTP without the edge every listen has the session ID
// "", and mcp-go keys cancellations by session ID and request ID, so two
// clients' listens with the same request ID cancel only the newer; the
// other ends when its connection does.)
func (a *Adapter) endListenRequest(s *stream) {
	if s.closer != nil {
		s.closer.close()
		return
	}
	if s.id == nil {
		return
	}
	msg, err := json.Marshal(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"method":  mcp.MethodNotificationCancelled,
		"params":  map[string]any{"requestId": s.id, "reason": "the server is shutting down"},
	})
	if err != nil {
		return
	}
	a.srv.HandleMessage(a.srv.WithContext(context.Background(), s.c.session), msg)
}

// listenCloser lets Close end a subscriptions/listen request that
// HTTPHandler serves: it writes the request's result into the response,
// as mcp-go writes it when the client cancels, and cancels the request, so
// that mcp-go writes nothing more and the client sees a complete answer.
type listenCloser struct {
	id     json.RawMessage
	edge   *httpEdge
	cancel context.CancelFunc
	once   sync.Once
}

type listenCloserKey struct{}

func withListenCloser(ctx context.Context, lc *listenCloser) context.Context {
	return context.WithValue(ctx, listenCloserKey{}, lc)
}

func listenCloserFrom(ctx context.Context) *listenCloser {
	lc, _ := ctx.Value(listenCloserKey{}).(*listenCloser)
	return lc
}

func (lc *listenCloser) close() {
	lc.once.Do(func() {
		if lc.edge != nil {
			lc.edge.finishListen(lc.id)
		}
		lc.cancel()
	})
}
