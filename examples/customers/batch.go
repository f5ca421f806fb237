package main

import (
	"context"

	"github.com/mcplive/adapter"
)

// The batch forms of customers_show and orders_between (adapter.WithBatch).
//
// When a write to customers re-runs a thousand watched customers_show
// subscriptions, the adapter calls showMany with their thousand argument
// sets (a few hundred a call) instead of show a thousand times: one query
// each call, WHERE id IN (...), rather than one query per customer. Each
// argument set still gets exactly what show would have returned, error
// included, so that its subscriber hears of a change only when its own
// customer changed.

// showMany is customers_show for many customers at once.
func (s *shop) showMany(ctx context.Context, args []ShowArgs) ([]Customer, error) {
	ids := make([]int64, len(args))
	for i, a := range args {
		ids[i] = a.ID
		// What show reports, for each argument set.
		adapter.ReadsAt(ctx, i, customerKey(a.ID))
	}
	found, err := s.st.customersByIDs(ctx, ids)
	if err != nil {
		return nil, err // the adapter then runs show for each, alone
	}
	byID := make(map[int64]Customer, len(found))
	for _, c := range found {
		byID[c.ID] = c
	}
	results := make([]Customer, len(args))
	var errs adapter.BatchErrors
	for i, a := range args {
		c, ok := byID[a.ID]
		if !ok {
			if errs == nil {
				errs = make(adapter.BatchErrors, len(args))
			}
			errs[i] = customerNotFound(a.ID)
			continue
		}
		results[i] = c
	}
	if errs != nil {
		return results, errs
	}
	return results, nil
}

// ordersBetweenMany is orders_between for many ranges at once.
func (s *shop) ordersBetweenMany(ctx context.Context, args []OrdersBetweenArgs) ([]OrdersResult, error) {
	adapter.Reads(ctx, tableOrders) // every range reads the table, as ordersBetween does
	ranges := make([]orderRange, len(args))
	for i, a := range args {
		ranges[i] = orderRange{From: a.From, To: a.To, Status: string(a.Status)}
	}
	lists, err := s.st.ordersBetweenMany(ctx, ranges)
	if err != nil {
		return nil, err
	}
	results := make([]OrdersResult, len(args))
	for i, orders := range lists {
		results[i] = ordersResult(orders)
	}
	return results, nil
}
