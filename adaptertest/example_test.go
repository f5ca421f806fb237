package adaptertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplive/adapter"
	"github.com/mcplive/adapter/adaptertest"
)

type ShowArgs struct {
	ID int64 `json:"id"`
}

type Customer struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func showCustomer(_ context.Context, args ShowArgs) (Customer, error) {
	if args.ID != 12 {
		return Customer{}, fmt.Errorf("customer %d: %w", args.ID, adapter.ErrNotFound)
	}
	return Customer{ID: 12, Name: "Ada Lovelace"}, nil
}

// A test of an application: read an expanded URI as an agent would, on both
// protocol eras, and check the exact errors. (The body of a test function;
// examples get no *testing.T to run it with.)
func ExampleNew() {
	testShowCustomer := func(t *testing.T) {
		a := adapter.Wrap(server.NewMCPServer("shop", "1.0.0"))
		adapter.Live(a, "customers_show", "One customer.", showCustomer)

		for _, era := range []struct {
			opts     []adaptertest.Option
			notFound int
		}{
			{nil, -32602}, // 2026-07-28
			{[]adaptertest.Option{adaptertest.Legacy()}, -32002}, // 2025-11-25
		} {
			c := adaptertest.New(t, a, era.opts...)

			text, err := c.Read("app://customers_show/12")
			if err != nil || text != `{"id":12,"name":"Ada Lovelace"}` {
				t.Errorf("Read = %s, %v", text, err)
			}

			_, err = c.Read("app://customers_show/13")
			var werr *adaptertest.WireError
			if !errors.As(err, &werr) || werr.Code != era.notFound || werr.URI() != "app://customers_show/13" {
				t.Errorf("Read of a missing customer = %v", err)
			}

			_, werr = c.ReadRaw("app://customers_show/twelve")
			if werr == nil || werr.Code != -32602 || werr.FieldErrors()[0].Field != "id" {
				t.Errorf("Read of a bad id = %v", werr)
			}
		}
	}
	_ = testShowCustomer
}
