package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcplive/adapter/e2e/internal/loadkit"
	"github.com/mcplive/adapter/e2e/internal/loadkit/mcpgoclient"
)

// customer is what customers_show reads and customers_update returns.
type customer struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// customerNames reads the names of customers 1 to n on c.
func customerNames(ctx context.Context, c *client.Client, n int) (map[int64]string, error) {
	names := make(map[int64]string, n)
	for id := int64(1); id <= int64(n); id++ {
		text, err := mcpgoclient.ReadText(ctx, c, loadkit.ShowURI(id))
		if err != nil {
			return nil, err
		}
		var got customer
		if err := json.Unmarshal([]byte(text), &got); err != nil || got.ID != id || got.Name == "" {
			return nil, fmt.Errorf("read %s: %.200s is not customer %d with a name", loadkit.ShowURI(id), text, id)
		}
		names[id] = got.Name
	}
	return names, nil
}

// write makes the changes of plan on c with the customers_update tool,
// starting one every 1/perSecond s whether or not the earlier ones have
// returned, as independent writers would: a slow server does not slow the
// load down, it piles up. It notes in log when each write started, and
// returns once every write has returned, with when the writes started and
// returned.
func write(ctx context.Context, c *client.Client, plan []loadkit.Change, perSecond int, log *loadkit.WriteLog) (writeTimes, error) {
	interval := time.Second / time.Duration(perSecond)
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wt writeTimes
	pace := time.NewTimer(0)
	defer pace.Stop()
	wt.firstStart = time.Now()
	for i, ch := range plan {
		pace.Reset(time.Until(wt.firstStart.Add(time.Duration(i) * interval)))
		select {
		case <-pace.C:
		case <-ctx.Done():
			wg.Wait()
			return wt, fmt.Errorf("write %d of %d: %w", i+1, len(plan), ctx.Err())
		}
		// Noted here, in plan order, so that each customer's starts are
		// in order.
		wt.lastStart = time.Now()
		log.Started(ch.ID, wt.lastStart)
		wg.Go(func() {
			err := update(ctx, c, ch)
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[i] = fmt.Errorf("write %d of %d: %w", i+1, len(plan), err)
			}
			if now.After(wt.lastDone) {
				wt.lastDone = now
			}
		})
	}
	wg.Wait()
	return wt, errors.Join(errs...)
}

// writeTimes are when a run's writes started, and when the last
// returned.
type writeTimes struct {
	firstStart, lastStart, lastDone time.Time
}

// perSecond is the rate of n events from first to last: n-1 intervals.
func perSecond(n int, first, last time.Time) float64 {
	return float64(n-1) / max(last.Sub(first).Seconds(), 1e-9)
}

// update calls customers_update and checks that it answered the changed
// customer.
func update(ctx context.Context, c *client.Client, ch loadkit.Change) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name:      "customers_update",
		Arguments: map[string]any{"id": ch.ID, "name": ch.Name, "email": ch.Email},
	}})
	if err != nil {
		return fmt.Errorf("customers_update %d: %w", ch.ID, err)
	}
	var text string
	if len(res.Content) == 1 {
		if tc, ok := mcp.AsTextContent(res.Content[0]); ok {
			text = tc.Text
		}
	}
	var got customer
	if res.IsError || json.Unmarshal([]byte(text), &got) != nil || got != (customer{ch.ID, ch.Name, ch.Email}) {
		return fmt.Errorf("customers_update %d: answered (isError %v) %.300q, want the customer with name %q and email %q", ch.ID, res.IsError, text, ch.Name, ch.Email)
	}
	return nil
}
