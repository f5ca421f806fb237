package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcplive/adapter/e2e/internal/loadkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// direct connects a go-sdk session straight to the example, past every
// proxy, on 2025-11-25 without a GET stream: the writer's and the
// checker's. It is closed with closeDirect.
func direct(ctx context.Context, endpoint string) (*mcp.ClientSession, *http.Transport, error) {
	rt := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcplive-chaos-writer", Version: "0.0.0"}, nil)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true,
	}, &mcp.ClientSessionOptions{ProtocolVersion: legacyEra})
	if err != nil {
		rt.CloseIdleConnections()
		return nil, nil, err
	}
	return cs, rt, nil
}

// write makes the changes of plan through cs, starting one every
// 1/perSecond s whether or not the earlier ones have returned, as
// independent writers would, and notes in log when each started. It
// returns once every write has returned, with how long the starts took
// from the first to the last.
func write(ctx context.Context, cs *mcp.ClientSession, plan []change, perSecond int, log *loadkit.WriteLog) (time.Duration, error) {
	interval := time.Second / time.Duration(perSecond)
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	pace := time.NewTimer(0)
	defer pace.Stop()
	start, last := time.Now(), time.Time{}
	for i, ch := range plan {
		pace.Reset(time.Until(start.Add(time.Duration(i) * interval)))
		select {
		case <-pace.C:
		case <-ctx.Done():
			wg.Wait()
			return 0, fmt.Errorf("write %d of %d: %w", i+1, len(plan), ctx.Err())
		}
		last = time.Now()
		log.Started(ch.id, last)
		wg.Go(func() {
			if err := rename(ctx, cs, ch); err != nil {
				errs[i] = fmt.Errorf("write %d of %d: %w", i+1, len(plan), err)
			}
		})
	}
	wg.Wait()
	return last.Sub(start), errors.Join(errs...)
}

// rename calls customers_update and checks that it answered the renamed
// customer.
func rename(ctx context.Context, cs *mcp.ClientSession, ch change) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "customers_update",
		Arguments: map[string]any{"id": ch.id, "name": ch.name},
	})
	if err != nil {
		return fmt.Errorf("customers_update %d: %w", ch.id, err)
	}
	var text string
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	var got struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if res.IsError || json.Unmarshal([]byte(text), &got) != nil || got.ID != ch.id || got.Name != ch.name {
		return fmt.Errorf("customers_update %d: answered (isError %v) %.300q, want the customer named %q", ch.id, res.IsError, text, ch.name)
	}
	return nil
}

// readTruth reads every watched customer on cs: what the example holds.
func readTruth(ctx context.Context, cs *mcp.ClientSession) (map[string]string, error) {
	truth := make(map[string]string, watched)
	for id := int64(1); id <= watched; id++ {
		uri := loadkit.ShowURI(id)
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: uri})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", uri, err)
		}
		r, err := showResult(uri, res)
		if err != nil {
			return nil, err
		}
		truth[uri] = r.name
	}
	return truth, nil
}

// checkSeed checks that the example holds the customers the plan
// assumes.
func checkSeed(ctx context.Context, cs *mcp.ClientSession) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: "app://customers_index?per_page=1"})
	if err != nil {
		return err
	}
	var page struct {
		Total int `json:"total"`
	}
	if len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &page) != nil || page.Total != customerCount {
		return fmt.Errorf("the example holds %.200v; the test assumes %d customers (examples/customers/seed.go)", res.Contents, customerCount)
	}
	return nil
}
