package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// A writer makes the run's writes: through the instances, each write
// through one picked at random among those alive, on a session of its own
// straight to it (past the balancer, so that the instance is the one the
// test picked); and every dbEvery-th write straight into PostgreSQL with
// SQL, as psql or another service would, which only the triggers report.
type writer struct {
	instances []*client.Client
	db        *pgxpool.Pool
	dbEvery   int
	rng       *rand.Rand

	alive    []bool
	inFlight []sync.WaitGroup
}

func newWriter(instances []*client.Client, db *pgxpool.Pool, dbEvery int) *writer {
	w := &writer{
		instances: instances, db: db, dbEvery: dbEvery,
		// Seeded: the same run picks the same instances.
		rng:      rand.New(rand.NewPCG(1, 2)),
		alive:    make([]bool, len(instances)),
		inFlight: make([]sync.WaitGroup, len(instances)),
	}
	for i := range w.alive {
		w.alive[i] = true
	}
	return w
}

// writeCounts are how the writes went.
type writeCounts struct {
	viaInstance, viaDB int
	span               time.Duration // first write's start to the last's
}

// write makes the changes of plan, starting one every 1/perSecond s
// whether or not the earlier ones have returned, as independent writers
// would: a slow server does not slow the load down, it piles up. It notes
// in log when each write started. Before write number killAt it stops
// writing through instance victim, waits for its writes in flight, and
// calls kill: so every write either happened or failed the test, and the
// instance dies with reads, streams and sessions in flight. It returns
// once every write has returned.
func (w *writer) write(ctx context.Context, plan []loadkit.Change, perSecond int, log *loadkit.WriteLog, killAt, victim int, kill func() error) (writeCounts, error) {
	interval := time.Second / time.Duration(perSecond)
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	var counts writeCounts
	pace := time.NewTimer(0)
	defer pace.Stop()
	start, last := time.Now(), time.Time{}
	for i, ch := range plan {
		pace.Reset(time.Until(start.Add(time.Duration(i) * interval)))
		select {
		case <-pace.C:
		case <-ctx.Done():
			wg.Wait()
			return counts, fmt.Errorf("write %d of %d: %w", i+1, len(plan), ctx.Err())
		}
		if i == killAt {
			w.alive[victim] = false
			w.inFlight[victim].Wait()
			if err := kill(); err != nil {
				wg.Wait()
				return counts, fmt.Errorf("kill instance %d: %w", victim, err)
			}
		}
		// Noted here, in plan order, so that each customer's starts are
		// in order.
		last = time.Now()
		log.Started(ch.ID, last)
		if w.dbEvery > 0 && (i+1)%w.dbEvery == 0 {
			counts.viaDB++
			wg.Go(func() {
				if err := w.updateDB(ctx, ch); err != nil {
					errs[i] = fmt.Errorf("write %d of %d, by SQL: %w", i+1, len(plan), err)
				}
			})
			continue
		}
		counts.viaInstance++
		n := w.pick()
		w.inFlight[n].Add(1)
		wg.Go(func() {
			defer w.inFlight[n].Done()
			if err := update(ctx, w.instances[n], ch); err != nil {
				errs[i] = fmt.Errorf("write %d of %d, through instance %d: %w", i+1, len(plan), n, err)
			}
		})
	}
	wg.Wait()
	counts.span = last.Sub(start)
	return counts, errors.Join(errs...)
}

// pick returns an instance alive, at random.
func (w *writer) pick() int {
	for {
		if n := w.rng.IntN(len(w.instances)); w.alive[n] {
			return n
		}
	}
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

// updateDB makes the change with SQL, in a transaction of its own.
func (w *writer) updateDB(ctx context.Context, ch loadkit.Change) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	tag, err := w.db.Exec(ctx, `UPDATE customers SET name = $1, email = $2 WHERE id = $3`, ch.Name, ch.Email, ch.ID)
	if err != nil {
		return fmt.Errorf("UPDATE customer %d: %w", ch.ID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("UPDATE customer %d: %d rows, want 1", ch.ID, tag.RowsAffected())
	}
	return nil
}
