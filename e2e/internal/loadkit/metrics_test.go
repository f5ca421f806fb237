package loadkit

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// ScrapeMetrics parses the text format the example serves, and Sum adds
// the series whose labels match.
func TestScrapeMetrics(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`# TYPE mcplive_command_runs_total counter
mcplive_command_runs_total{cause="read",command="customers_show"} 3
mcplive_command_runs_total{cause="read",command="customers_index"} 4
mcplive_command_runs_total{cause="rerun",command="customers_show"} 7
# TYPE mcplive_kept_results gauge
mcplive_kept_results 2
`))
	}))
	defer hs.Close()
	m, err := ScrapeMetrics(t.Context(), hs.Client(), hs.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mcplive_command_runs_total", []string{"cause=read"}, 7},
		{"mcplive_command_runs_total", []string{"cause=read", "command=customers_show"}, 3},
		{"mcplive_command_runs_total", nil, 14},
		{"mcplive_kept_results", nil, 2},
		{"mcplive_absent_total", nil, 0},
	} {
		if got := m.Sum(tc.name, tc.labels...); got != tc.want {
			t.Errorf("Sum(%s, %q) = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if _, err := ScrapeMetrics(t.Context(), hs.Client(), hs.URL+"/nowhere/mcp"); err == nil {
		t.Error("a scrape of a 404 succeeded")
	}
}
