package loadkit

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"none", nil, 50, 0},
		{"one value is every percentile", []time.Duration{7}, 99, 7},
		{"median of ten is the fifth", ten, 50, 5},
		{"p99 of ten is the largest", ten, 99, 10},
		{"p100 is the largest", ten, 100, 10},
		{"tiny p is the smallest", ten, 0.1, 1},
		{"p99 of a hundred is the 99th", hundred, 99, 99},
		{"p50 of a hundred is the 50th", hundred, 50, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}
