package main

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mcplive/adapter"
)

// The batch forms must answer each argument set exactly as the command
// does, errors included: the adapter uses either, and a difference would
// notify subscribers of changes that did not happen.
func TestBatchFormsMatch(t *testing.T) {
	checkBatchFormsMatch(t, &shop{st: newTestStore(t)})
}

func checkBatchFormsMatch(t *testing.T, s *shop) {
	t.Helper()
	ctx := t.Context()
	var shows []ShowArgs
	for id := int64(-1); id <= int64(len(seedNames())+5); id += 2 { // some do not exist
		shows = append(shows, ShowArgs{ID: id})
	}
	customers, err := s.showMany(ctx, shows)
	var errs adapter.BatchErrors
	if !errors.As(err, &errs) || len(customers) != len(shows) || len(errs) != len(shows) {
		t.Fatalf("showMany: %d results, %v", len(customers), err)
	}
	for i, a := range shows {
		want, wantErr := s.show(ctx, a)
		if fmt.Sprint(errs[i]) != fmt.Sprint(wantErr) || wantErr == nil && customers[i] != want {
			t.Errorf("customer %d: batch %+v, %v; single %+v, %v", a.ID, customers[i], errs[i], want, wantErr)
		}
	}

	var ranges []OrdersBetweenArgs
	for _, r := range [][2]string{{"2023-01-01", "2023-03-31"}, {"2023-06-01", "2023-06-01"}, {"2023-02-10", "2024-02-10"}, {"1999-01-01", "1999-12-31"}} {
		for _, status := range []OrderStatus{"", StatusOpen, StatusPaid, StatusCancelled} {
			ranges = append(ranges, OrdersBetweenArgs{From: r[0], To: r[1], Status: status})
		}
	}
	results, err := s.ordersBetweenMany(ctx, ranges)
	if err != nil || len(results) != len(ranges) {
		t.Fatalf("ordersBetweenMany: %d results, %v", len(results), err)
	}
	some := 0
	for i, a := range ranges {
		want, err := s.ordersBetween(ctx, a)
		if err != nil || !reflect.DeepEqual(results[i], want) {
			t.Errorf("orders %+v: batch %+v; single %+v, %v", a, results[i], want, err)
		}
		some += want.Count
	}
	if some == 0 {
		t.Error("no range holds an order: the comparison says nothing")
	}
}
