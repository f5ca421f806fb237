package chaos

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A cut is how the proxy ends a connection.
type cut int

const (
	// cutReset resets both sides (SO_LINGER 0): a crashed proxy, a
	// firewall's RST. What was in flight is lost.
	cutReset cut = iota
	// cutClose closes both sides cleanly (FIN): a proxy that restarts
	// politely, an idle timeout. The client sees its response end early.
	cutClose
	// cutSilent resets the client's side and leaves the server's open,
	// taking and dropping whatever the server still sends, for silentHold:
	// a NAT entry or a balancer that forgot the connection. The server
	// does not learn it is gone and goes on writing into it.
	cutSilent
)

func (c cut) String() string {
	return [...]string{"reset", "close", "silent"}[c]
}

// silentHold is how long a silently cut connection's server side stays
// open after the cut.
const silentHold = 10 * time.Second

// A proxy is one client's way to the example: a TCP proxy on a loopback
// port of its own, in the test process, with a pair of copies per
// connection, which the chaos scheduler cuts. It dials the example from
// the client's own loopback address, so that the example, which caps
// subscriptions per client address, tells the clients apart.
type proxy struct {
	ln     net.Listener
	target string
	dialer net.Dialer

	mu     sync.Mutex
	links  map[*link]struct{}
	closed bool
	// opened is nudged (capacity 1) when a connection opens.
	opened chan struct{}
	wg     sync.WaitGroup

	accepted atomic.Int64
	// dropped counts the bytes servers wrote into silently cut
	// connections.
	dropped atomic.Int64
}

// startProxy listens on a free 127.0.0.1 port and forwards every
// connection to target, dialled from the address from.
func startProxy(target string, from net.IP) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{
		ln: ln, target: target,
		dialer: net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: from}},
		links:  make(map[*link]struct{}),
		opened: make(chan struct{}, 1),
	}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the address clients connect to.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // Close closed the listener
		}
		s, err := p.dialer.Dial("tcp", p.target)
		if err != nil {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			continue
		}
		l := &link{client: c.(*net.TCPConn), server: s.(*net.TCPConn), dropped: &p.dropped}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.end()
			continue
		}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.accepted.Add(1)
		select {
		case p.opened <- struct{}{}:
		default:
		}
		var copies sync.WaitGroup
		copies.Go(l.toServer)
		copies.Go(l.toClient)
		p.wg.Go(func() {
			copies.Wait()
			p.mu.Lock()
			delete(p.links, l)
			p.mu.Unlock()
		})
	}
}

// live reports how many connections the proxy carries that were not cut.
func (p *proxy) live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for l := range p.links {
		if !l.isCut() {
			n++
		}
	}
	return n
}

// cut ends every connection the proxy carries that was not cut yet, as
// how says, and returns how many it ended.
func (p *proxy) cut(how cut) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for l := range p.links {
		if l.cut(how) {
			n++
		}
	}
	return n
}

// Close stops accepting, ends every connection, and returns once every
// copy has stopped.
func (p *proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for l := range p.links {
		l.end()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// A link is one client connection and the proxy's connection to the
// server for it.
type link struct {
	client, server *net.TCPConn

	mu     sync.Mutex
	ended  bool // both sides closed, or the client's cut and the server's held
	silent bool // cut silently: the server's side is drained, not forwarded
	hold   *time.Timer
	// dropped counts the bytes drained from a silently cut server side.
	dropped *atomic.Int64
}

func (l *link) isCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended || l.silent
}

// toServer copies the client's bytes to the server until either side
// fails, then ends the link (a silent cut leaves the server's side to its
// hold).
func (l *link) toServer() {
	io.Copy(l.server, l.client)
	l.mu.Lock()
	silent := l.silent
	l.mu.Unlock()
	if !silent {
		l.end()
	}
}

// toClient copies the server's bytes to the client, or drops them once
// the link was cut silently, until the server's side ends.
func (l *link) toClient() {
	buf := make([]byte, 32<<10)
	for {
		n, err := l.server.Read(buf)
		if n > 0 {
			l.mu.Lock()
			silent := l.silent
			l.mu.Unlock()
			if silent {
				l.dropped.Add(int64(n))
			} else if _, werr := l.client.Write(buf[:n]); werr != nil && !l.isCut() {
				l.end()
			}
		}
		if err != nil {
			l.end()
			return
		}
	}
}

// cut ends the link as how says; false if it was cut already.
func (l *link) cut(how cut) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.silent {
		return false
	}
	switch how {
	case cutReset:
		l.client.SetLinger(0)
		l.server.SetLinger(0)
		l.endLocked()
	case cutClose:
		l.endLocked()
	case cutSilent:
		l.silent = true
		l.client.SetLinger(0)
		l.client.Close()
		l.hold = time.AfterFunc(silentHold, l.end)
	}
	return true
}

func (l *link) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked()
}

func (l *link) endLocked() {
	if l.hold != nil {
		l.hold.Stop()
	}
	if l.ended {
		return
	}
	l.ended = true
	l.client.Close()
	l.server.Close()
}

// cutCounts are the cuts the scheduler made.
type cutCounts struct {
	cuts  atomic.Int64 // cuts that ended at least one connection
	links atomic.Int64 // connections ended
	by    [3]atomic.Int64
}

// cutTimes are the moments one client's connections were cut.
type cutTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (c *cutTimes) add(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = append(c.at, t)
}

func (c *cutTimes) list() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at...)
}

// Cut gaps: the scheduler waits a random time in [minGap, maxGap] after
// a cut ([quietMinGap, quietMaxGap] once the writes pause), then cuts
// every connection the client has open; when it has none, it cuts the
// next one to open, after up to openDelay. So a client whose connections
// stay up is cut at least once every maxGap.
const (
	minGap      = 500 * time.Millisecond
	maxGap      = 4 * time.Second
	quietMinGap = 300 * time.Millisecond
	quietMaxGap = 1500 * time.Millisecond
	openDelay   = 300 * time.Millisecond
)

// runChaos cuts p's connections until stop is closed or ctx ends, more
// often once quiet is closed: each cut a reset, a clean close or a silent
// cut, at random from rng, the first of them two times in five each,
// silent cuts one in five.
func runChaos(ctx context.Context, p *proxy, rng *rand.Rand, quiet, stop <-chan struct{}, counts *cutCounts, times *cutTimes) {
	wait := time.NewTimer(0)
	defer wait.Stop()
	pause := func(d time.Duration) bool {
		wait.Reset(d)
		select {
		case <-wait.C:
			return true
		case <-stop:
		case <-ctx.Done():
		}
		return false
	}
	for {
		lo, hi := minGap, maxGap
		select {
		case <-quiet:
			lo, hi = quietMinGap, quietMaxGap
		default:
		}
		if !pause(lo + time.Duration(rng.Int64N(int64(hi-lo)+1))) {
			return
		}
		for p.live() == 0 {
			select {
			case <-p.opened:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
			if !pause(time.Duration(rng.Int64N(int64(openDelay)))) {
				return
			}
		}
		how := cutReset
		switch r := rng.IntN(5); {
		case r >= 4:
			how = cutSilent
		case r >= 2:
			how = cutClose
		}
		if n := p.cut(how); n > 0 {
			counts.cuts.Add(1)
			counts.links.Add(int64(n))
			counts.by[how].Add(1)
			times.add(time.Now())
		}
	}
}
