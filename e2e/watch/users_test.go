package watch

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestWatchAsEachUser runs the README's per-user watch (-header with a
// demo user's bearer token, app://my_orders) against the example, once with
// Ada's token, as the README shows it, and once with Kurt's. An order
// recorded for Ada prints in Ada's watch, with its diff, and not in
// Kurt's; one recorded for Kurt then prints in Kurt's, and it is the only
// notification Kurt's watch printed.
func TestWatchAsEachUser(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var watchArgs []string
	for _, b := range fenced(string(readme)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(b.code), "go run ./cmd/mcplive-watch "); ok && b.lang == "sh" && strings.Contains(rest, "-header") {
			watchArgs = shellWords(t, rest)
		}
	}
	if watchArgs == nil {
		t.Fatal("README.md no longer shows a `go run ./cmd/mcplive-watch -header …` command")
	}
	endpoint := example.StartHTTP(t)
	argsFor := func(token string) []string {
		args := make([]string, len(watchArgs))
		for i, arg := range watchArgs {
			switch {
			case arg == "http://127.0.0.1:8080/mcp":
				arg = endpoint
			case strings.HasPrefix(arg, "Authorization: Bearer "):
				arg = "Authorization: Bearer " + token
			}
			args[i] = arg
		}
		return args
	}
	if !strings.Contains(strings.Join(watchArgs, " "), "Authorization: Bearer demo-ada") || !slices.Contains(watchArgs, "app://my_orders") {
		t.Fatalf("README.md's per-user watch is %q; want Ada's token and app://my_orders", watchArgs)
	}

	ada := startToolOnePipe(t, argsFor("demo-ada")...)
	kurt := startToolOnePipe(t, argsFor("demo-kurt")...)
	watching := regexp.MustCompile(`mcplive-watch: watching 1 URI on \S+ \(protocol \S+, [^)]+\); Ctrl-C stops\n`)
	ada.stdout.waitFor(t, watching, "Ada's watch saying it watches")
	kurt.stdout.waitFor(t, watching, "Kurt's watch saying it watches")
	customerIDs := regexp.MustCompile(`"customer_id": (\d+),`)
	for _, w := range []struct {
		who, id string
		p       *proc
	}{{"Ada", "1", ada}, {"Kurt", "9", kurt}} {
		ids := customerIDs.FindAllStringSubmatch(w.p.stdout.String(), -1)
		for _, m := range ids {
			if m[1] != w.id {
				t.Errorf("%s's watch (customer %s) first read an order of customer %s:\n%s", w.who, w.id, m[1], w.p.stdout)
				break
			}
		}
		if len(ids) == 0 {
			t.Errorf("%s's watch first read no order (the seed gives each demo user some):\n%s", w.who, w.p.stdout)
		}
	}

	order := func(customer, cents int) {
		callTool(t, endpoint, "orders_create", map[string]any{"customer_id": customer, "amount_cents": cents, "status": "open", "placed_on": "2026-12-06"})
	}
	updated := regexp.MustCompile(`(?m)^\S+ updated app://my_orders$`)
	order(1, 4242)
	ada.stdout.waitFor(t, regexp.MustCompile(`(?s)updated app://my_orders\n\S+ read app://my_orders\n.*\+ +"amount_cents": 4242,`), "Ada's new order in Ada's watch")
	order(9, 9191)
	kurt.stdout.waitFor(t, regexp.MustCompile(`(?s)updated app://my_orders\n\S+ read app://my_orders\n.*\+ +"amount_cents": 9191,`), "Kurt's new order in Kurt's watch")
	if out := kurt.stdout.String(); len(updated.FindAllString(out, -1)) != 1 || strings.Contains(out, "4242") {
		t.Errorf("Kurt's watch printed Ada's order, or a notification for it:\n%s", out)
	}
	if out := ada.stdout.String(); len(updated.FindAllString(out, -1)) != 1 || strings.Contains(out, "9191") {
		t.Errorf("Ada's watch printed Kurt's order, or a notification for it:\n%s", out)
	}
	for _, p := range []*proc{ada, kurt} {
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if code := p.exit(t); code != 0 {
			t.Errorf("exit status %d after SIGINT, want 0", code)
		}
	}
}
