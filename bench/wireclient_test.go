package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The clients of the wire benchmarks run in a process of their own, this
// test binary started again with wireClientEnv set, so that what the
// benchmark's process spends is the server's alone. They are plain HTTP
// clients of legacy Streamable HTTP (2025-11-25): each session
// initializes, opens its GET stream, subscribes, and counts the
// notifications/resources/updated that arrive on the stream.
//
// The benchmark talks to them over the child's stdin and stdout, a line
// each way:
//
//	(child)  ready                    every session subscribed
//	wait N   (child) ok               N notifications have arrived in all
//	read N   (child) ok               N resources/read done, spread over the sessions
//
// The child exits when its stdin closes, closing every session.

// wireClientEnv holds the child's work: URL, sessions, subscriptions a
// session, and how many distinct URIs they spread over, comma-separated.
const wireClientEnv = "MCPLIVE_BENCH_WIRE_CLIENTS"

// wireProtocol is the legacy era, whose sessions hear notifications on a
// GET stream.
const wireProtocol = "2025-11-25"

// wireTimeout bounds every request of a client, and every wait of the
// benchmark for its clients.
const wireTimeout = 60 * time.Second

// runWireClients is the child's main: it returns the exit code.
func runWireClients(spec string) int {
	var url string
	var sessions, perSession, distinct int
	parts := strings.Split(spec, ",")
	if len(parts) == 4 {
		url = parts[0]
		sessions, _ = strconv.Atoi(parts[1])
		perSession, _ = strconv.Atoi(parts[2])
		distinct, _ = strconv.Atoi(parts[3])
	}
	if url == "" || sessions < 1 || perSession < 1 || distinct < perSession {
		fmt.Fprintf(os.Stderr, "wire clients: %s=%q: want URL,SESSIONS,PER_SESSION,DISTINCT\n", wireClientEnv, spec)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &wireClients{
		url: url,
		hc: &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 4 * sessions,
		}},
		arrived: make(chan struct{}, 1),
	}
	if err := w.open(ctx, sessions, perSession, distinct); err != nil {
		fmt.Fprintf(os.Stderr, "wire clients: %v\n", err)
		return 1
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		verb, arg, _ := strings.Cut(in.Text(), " ")
		n, _ := strconv.ParseInt(arg, 10, 64)
		var err error
		switch verb {
		case "wait":
			err = w.wait(n)
		case "read":
			err = w.read(ctx, int(n))
		default:
			err = fmt.Errorf("unknown command %q", in.Text())
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "wire clients: %v\n", err)
			return 1
		}
		fmt.Println("ok")
	}
	return 0
}

// wireClients are the child's sessions.
type wireClients struct {
	url      string
	hc       *http.Client
	sessions []*wireSession
	// received counts the notifications of every session; arrived is
	// signalled when it grows.
	received atomic.Int64
	arrived  chan struct{}
	next     atomic.Int64 // request ids
}

type wireSession struct {
	id   string
	uris []string
}

// open makes the sessions, 16 at a time: each initializes, opens its GET
// stream and subscribes to perSession of the distinct URIs, a window that
// starts at its number.
func (w *wireClients) open(ctx context.Context, sessions, perSession, distinct int) error {
	w.sessions = make([]*wireSession, sessions)
	errs := make([]error, sessions)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range w.sessions {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s := &wireSession{}
			for j := range perSession {
				s.uris = append(s.uris, "app://items_show/"+strconv.Itoa(1+(i+j)%distinct))
			}
			w.sessions[i] = s
			errs[i] = w.openSession(ctx, s)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *wireClients) openSession(ctx context.Context, s *wireSession) error {
	resp, err := w.post(ctx, s, "initialize", `{"protocolVersion":"`+wireProtocol+`","capabilities":{},"clientInfo":{"name":"bench-wire","version":"0"}}`)
	if err != nil {
		return err
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	if s.id == "" {
		return errors.New("initialize: no Mcp-Session-Id")
	}
	if _, err := w.post(ctx, s, "notifications/initialized", ""); err != nil {
		return err
	}
	opened := make(chan error, 1)
	go w.listen(ctx, s, opened)
	if err := <-opened; err != nil {
		return err
	}
	for _, uri := range s.uris {
		if _, err := w.post(ctx, s, "resources/subscribe", `{"uri":"`+uri+`"}`); err != nil {
			return err
		}
	}
	return nil
}

// listen opens s's GET stream, says on opened whether it did, and counts
// its notifications until ctx ends.
func (w *wireClients) listen(ctx context.Context, s *wireSession, opened chan<- error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url, nil)
	w.headers(req, s)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := w.hc.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("GET stream: %s", resp.Status)
	}
	opened <- err
	if err != nil {
		return
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 4096), 1<<20)
	for lines.Scan() {
		if line := lines.Bytes(); bytes.HasPrefix(line, []byte("data:")) && bytes.Contains(line, []byte(`"notifications/resources/updated"`)) {
			w.received.Add(1)
			select {
			case w.arrived <- struct{}{}:
			default:
			}
		}
	}
}

// wait returns once n notifications have arrived since the child started.
func (w *wireClients) wait(n int64) error {
	timeout := time.NewTimer(wireTimeout)
	defer timeout.Stop()
	for w.received.Load() < n {
		select {
		case <-w.arrived:
		case <-timeout.C:
			return fmt.Errorf("%d of %d notifications arrived within %v", w.received.Load(), n, wireTimeout)
		}
	}
	return nil
}

// read reads n URIs, each session its own in turn, 16 at a time.
func (w *wireClients) read(ctx context.Context, n int) error {
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		s := w.sessions[i%len(w.sessions)]
		uri := s.uris[(i/len(w.sessions))%len(s.uris)]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, errs[i] = w.post(ctx, s, "resources/read", `{"uri":"`+uri+`"}`)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// post sends one request (a notification when it has no params and its
// method starts with "notifications/"), reads the whole answer and checks
// that it is not an error.
func (w *wireClients) post(ctx context.Context, s *wireSession, method, params string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, wireTimeout)
	defer cancel()
	var body string
	if strings.HasPrefix(method, "notifications/") {
		body = `{"jsonrpc":"2.0","method":"` + method + `"}`
	} else {
		body = `{"jsonrpc":"2.0","id":` + strconv.FormatInt(w.next.Add(1), 10) + `,"method":"` + method + `","params":` + params + `}`
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.url, strings.NewReader(body))
	w.headers(req, s)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	isRequest := !strings.HasPrefix(method, "notifications/")
	if resp.StatusCode/100 != 2 || bytes.Contains(answer, []byte(`"error":`)) || isRequest && !bytes.Contains(answer, []byte(`"result":`)) {
		return nil, fmt.Errorf("%s: %s %.300s", method, resp.Status, answer)
	}
	return resp, nil
}

func (w *wireClients) headers(req *http.Request, s *wireSession) {
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", wireProtocol)
	}
}
