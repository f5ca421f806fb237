package main

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/mcplive/adapter/adaptertest"
)

// records is a slog.Handler that keeps what it is given, at every level
// from Info up, as main's default handler does.
type records struct {
	mu  sync.Mutex
	got []slog.Record
}

func (r *records) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (r *records) WithAttrs([]slog.Attr) slog.Handler           { return r }
func (r *records) WithGroup(string) slog.Handler                { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rec)
	return nil
}

// commands returns the level and the attributes of each "command" record.
func (r *records) commands() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, rec := range r.got {
		if rec.Message != "command" {
			continue
		}
		attrs := map[string]string{"level": rec.Level.String()}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key != "duration" && a.Key != "session" { // they vary
				attrs[a.Key] = a.Value.String()
			}
			return true
		})
		out = append(out, attrs)
	}
	return out
}

// The example logs every request to a command at info, through the
// adapter's log middleware, and a failed one at warn, with the error; never
// the arguments.
func TestRequestsAreLogged(t *testing.T) {
	log := &records{}
	c := adaptertest.New(t, newAdapter(newTestStore(t), slog.New(log)))

	if _, err := c.Read("app://customers_show/1"); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CallTool("customers_index", map[string]any{"search": "private"}); err != nil || res.IsError {
		t.Fatalf("customers_index: %+v, %v", res, err)
	}
	if _, err := c.Read("app://customers_show/999"); err == nil {
		t.Fatal("customer 999 was found")
	}

	want := []map[string]string{
		{"level": "INFO", "command": "customers_show", "origin": "agent", "outcome": "ok"},
		{"level": "INFO", "command": "customers_index", "origin": "agent", "outcome": "ok"},
		{"level": "WARN", "command": "customers_show", "origin": "agent", "outcome": "error",
			"error": "customer 999: not found"},
	}
	if got := log.commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("logged\n%q\nwant\n%q", got, want)
	}
}
