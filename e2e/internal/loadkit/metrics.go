package loadkit

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is a scrape of an example's GET /metrics, by metric family.
type Metrics map[string]*dto.MetricFamily

// ScrapeMetrics reads the metrics of the example whose MCP endpoint is
// mcpURL (http://HOST:PORT/mcp): GET /metrics beside it.
func ScrapeMetrics(ctx context.Context, c *http.Client, mcpURL string) (Metrics, error) {
	url := strings.TrimSuffix(mcpURL, "/mcp") + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return families, nil
}

// Sum is the sum of the counters and gauges of the family name whose
// labels include each of labels, given as "name=value".
func (m Metrics) Sum(name string, labels ...string) float64 {
	var sum float64
	for _, s := range m[name].GetMetric() {
		if !hasLabels(s, labels) {
			continue
		}
		switch {
		case s.Counter != nil:
			sum += s.GetCounter().GetValue()
		case s.Gauge != nil:
			sum += s.GetGauge().GetValue()
		}
	}
	return sum
}

func hasLabels(s *dto.Metric, want []string) bool {
	for _, w := range want {
		name, value, _ := strings.Cut(w, "=")
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == name && l.GetValue() == value {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
