package pgfeed

import "testing"

func TestSnapshotCompleted(t *testing.T) {
	for _, tc := range []struct {
		snapshot string
		xid      uint32
		want     bool
	}{
		{"100:105:101,103", 99, true},   // before xmin
		{"100:105:101,103", 100, true},  // xmin itself has completed when not listed
		{"100:105:100,103", 100, false}, // ... and not when it is
		{"100:105:101,103", 102, true},
		{"100:105:101,103", 103, false}, // running
		{"100:105:101,103", 105, false}, // from xmax on: not yet
		{"100:100:", 99, true},
		// Ids carry an epoch in the snapshot; the log's are 32 bits, and
		// they wrap around.
		{"4294967395:4294967397:", 100, true},
		{"4294967395:4294967397:", 101, false},
		{"4294967290:4294967300:", 4294967295, true}, // before the wrap, xmax after it
		{"4294967290:4294967300:", 3, true},          // 2^32+3, after the wrap
		{"4294967290:4294967300:", 4, false},
	} {
		snap, err := parseSnapshot(tc.snapshot)
		if err != nil {
			t.Fatalf("%s: %v", tc.snapshot, err)
		}
		if got := snap.completed(tc.xid); got != tc.want {
			t.Errorf("snapshot %s: completed(%d) = %v, want %v", tc.snapshot, tc.xid, got, tc.want)
		}
	}
	for _, bad := range []string{"", "1:2", "a:2:", "1:2:x", "1:2:3:4"} {
		if _, err := parseSnapshot(bad); err == nil {
			t.Errorf("parseSnapshot(%q): no error", bad)
		}
	}
}
