package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		sign int
	}{
		{"15", "9.6", 1},
		{"9.6", "10", -1},
		{"16", "16", 0},
		{"13", "17", -1},
	} {
		got := compareVersions(tc.a, tc.b)
		if (got > 0) != (tc.sign > 0) || (got < 0) != (tc.sign < 0) {
			t.Errorf("compareVersions(%q, %q) = %d, want sign %d", tc.a, tc.b, got, tc.sign)
		}
	}
}

func TestStartAnswersQueries(t *testing.T) {
	url := Start(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

// Without WithShared in TestMain, StartShared must fall back to a server of
// its own rather than leave one running after the test binary.
func TestStartSharedWithoutTestMainFallsBack(t *testing.T) {
	url := StartShared(t)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	if shared.cluster != nil {
		t.Fatal("StartShared started a shared server nobody will stop")
	}
}
