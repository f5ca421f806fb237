package loadkit

import (
	"fmt"
	"strings"
	"testing"
)

func TestWritePlan(t *testing.T) {
	names := make(map[int64]string)
	for id := int64(1); id <= CustomerCount; id++ {
		names[id] = fmt.Sprintf("Name %d", id)
	}
	plan := WritePlan(400, names)
	seen := make(map[string]bool)
	for i, ch := range plan {
		// Each customer comes round again CustomerCount writes later, so
		// each change stays its customer's last for that long.
		if want := int64(1 + i%CustomerCount); ch.ID != want {
			t.Fatalf("write %d changes customer %d, want %d", i, ch.ID, want)
		}
		if seen[ch.Name] || seen[ch.Email] {
			t.Fatalf("write %d repeats a name or an email: %q, %q", i, ch.Name, ch.Email)
		}
		seen[ch.Name], seen[ch.Email] = true, true
		if !strings.HasPrefix(ch.Name, names[ch.ID]+" ") {
			t.Errorf("write %d names customer %d %q, which does not keep %q", i, ch.ID, ch.Name, names[ch.ID])
		}
	}
}

func TestShowID(t *testing.T) {
	tests := []struct {
		uri    string
		id     int64
		wantOK bool
	}{
		{ShowURI(7), 7, true},
		{ShowURI(60), 60, true},
		{"app://customers_show/x", 0, false},
		{"app://customers_index?page=1", 0, false},
	}
	for _, tt := range tests {
		if id, ok := ShowID(tt.uri); id != tt.id || ok != tt.wantOK {
			t.Errorf("ShowID(%q) = %d, %v; want %d, %v", tt.uri, id, ok, tt.id, tt.wantOK)
		}
	}
}
