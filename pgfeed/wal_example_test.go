package pgfeed_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/pgfeed"
)

// A server whose instances hear each other's writes, and everyone else's,
// in the database's write-ahead log.
func ExampleWithSource() {
	ctx := context.Background()
	url := "postgres://app@db.internal/shop"
	feed := pgfeed.New(url,
		pgfeed.WithSource(pgfeed.WAL),
		pgfeed.WithTables(
			pgfeed.TableSpec{Table: "customers", IDColumn: "id"},
			pgfeed.TableSpec{Table: "orders", IDColumn: "id"},
		),
	)

	// At every start: the publication of the tables (the triggers, for
	// pgfeed.Notify). Idempotent, and safe when instances start together.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	err = feed.Install(ctx, conn)
	conn.Close(ctx)
	if err != nil {
		log.Fatal(err)
	}

	a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"), adapter.WithChangeFeed(feed))
	_ = a // declare the commands, serve

	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- feed.Run(runCtx) }()
	select {
	case <-feed.Ready(): // streaming: serve from here on
	case err := <-ran:
		log.Fatal(err) // wal_level is not logical, say: the error says what is missing
	}

	// At shutdown: stop Run, then Close, which drops this instance's
	// replication slot.
	stop()
	<-ran
	feed.Close()
}
