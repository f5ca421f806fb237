package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcplive/adapter/adaptertest"
	"github.com/mcplive/adapter/pgfeed/pgtest"
)

// Searching ignores case over all of Unicode, on SQLite and on PostgreSQL
// alike (fold.go). These tests run on both stores; the PostgreSQL halves
// skip where pgtest does.

// openStoreOf opens a fresh store of the named kind, "sqlite" or "postgres",
// that the test closes.
func openStoreOf(t *testing.T, kind string) *store {
	t.Helper()
	if kind == "sqlite" {
		return newTestStore(t)
	}
	st, err := openPostgres(t.Context(), pgtest.StartShared(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var storeKinds = []string{"sqlite", "postgres"}

// Each database's fold_case is foldCase: SQLite's calls it, PostgreSQL's is
// foldCaseSQL's rendering of it. Every character that folds is checked.
func TestFoldCaseInDatabases(t *testing.T) {
	var ascii strings.Builder // PostgreSQL's fold_case has a path of its own for ASCII
	for r := rune(1); r <= unicode.MaxASCII; r++ {
		ascii.WriteRune(r)
	}
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			st := openStoreOf(t, kind)
			for _, in := range []string{foldingRunes(), ascii.String(), "ADA.Lovelace@EXAMPLE.com", "Åke O'Brien"} {
				var got string
				if err := st.db.QueryRowContext(t.Context(), st.d.rebind(`SELECT fold_case(?)`), in).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if want := foldCase(in); got != want {
					g, w := []rune(got), []rune(want)
					for i := range min(len(g), len(w)) {
						if g[i] != w[i] {
							t.Fatalf("fold_case differs from foldCase at character %d: %q, want %q",
								i, string(g[i:min(i+5, len(g))]), string(w[i:min(i+5, len(w))]))
						}
					}
					t.Fatalf("fold_case gives %d characters, foldCase %d", len(g), len(w))
				}
			}
			var null sql.NullString
			if err := st.db.QueryRowContext(t.Context(), `SELECT fold_case(NULL)`).Scan(&null); err != nil || null.Valid {
				t.Errorf("fold_case(NULL) = %+v, %v; want NULL", null, err)
			}
		})
	}
}

// unicodeSearches are searches for customers whose names are not ASCII, and
// the names each must find, in the order customers_index sorts them.
func unicodeSearches() map[string][]string {
	return map[string][]string{
		"åke ärlig":  {"Åke Ärlig"},
		"ÅKE":        {"Åke Ärlig"},
		"AKE.ARLIG@": {"Åke Ärlig"}, // the email
		"ÄRLIG":      {"Åke Ärlig"},
		"STRAUSS":    {"Wolfgang Strauß"}, // ß folds to ss
		"strauß":     {"Wolfgang Strauß"},
		"ΣΩΚΡΆΤΗΣ":   {"Σωκράτης"}, // and σ, ς and Σ to σ
		"σωκράτης":   {"Σωκράτης"},
		"GÖDEL":      {"Kurt Gödel"}, // from the seed
		"Ö":          {"Kurt Gödel", "Per Martin-Löf"},
		"örlig":      {}, // case, not accents: ö is not ä
	}
}

// TestUnicodeSearch creates customers with non-ASCII names through the tool
// and finds them with customers_index, as a tool and as a read, on each
// store; both stores must answer every search alike.
func TestUnicodeSearch(t *testing.T) {
	found := map[string]map[string][]string{} // store kind → search → "id name <email>"
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			found[kind] = searchUnicode(t, adaptertest.New(t, newAdapter(openStoreOf(t, kind), quietLogger())))
		})
	}
	if found["sqlite"] != nil && found["postgres"] != nil && !reflect.DeepEqual(found["sqlite"], found["postgres"]) {
		t.Errorf("the stores found different customers:\nSQLite     %q\nPostgreSQL %q", found["sqlite"], found["postgres"])
	}
}

// searchUnicode creates the customers and runs unicodeSearches on c, as
// tools/call and as resources/read, and returns what each found.
func searchUnicode(t *testing.T, c *adaptertest.Client) map[string][]string {
	t.Helper()
	for _, who := range [][2]string{
		{"Åke Ärlig", "ake.arlig@example.com"},
		{"Wolfgang Strauß", "wolfgang.strauss@example.com"},
		{"Σωκράτης", "sokrates@example.com"},
	} {
		res, err := c.CallTool("customers_create", map[string]any{"name": who[0], "email": who[1]})
		if err != nil || res.IsError {
			t.Fatalf("customers_create %s: %+v, %v", who[0], res, err)
		}
	}
	found := map[string][]string{}
	for search, want := range unicodeSearches() {
		res, err := c.CallTool("customers_index", map[string]any{"search": search, "per_page": 100})
		if err != nil || res.IsError || len(res.Content) != 2 {
			t.Fatalf("customers_index search %q: %+v, %v", search, res, err)
		}
		text, ok := res.Content[0].(mcp.TextContent)
		link, isLink := res.Content[1].(mcp.ResourceLink)
		if !ok || !isLink {
			t.Fatalf("customers_index search %q: contents %T, %T, want text and a resource link", search, res.Content[0], res.Content[1])
		}
		byTool := decodeIndex(t, text.Text)

		// The URI spelled by hand, and the one the tool linked, which
		// percent-encodes every byte a URI may not carry as is.
		for _, uri := range []string{"app://customers_index?per_page=100&search=" + url.PathEscape(search), link.URI} {
			read, err := c.Read(uri)
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			if byRead := decodeIndex(t, read); !reflect.DeepEqual(byTool, byRead) {
				t.Errorf("search %q: the tool found %+v, the read of %s %+v", search, byTool.Customers, uri, byRead.Customers)
			}
		}
		names := []string{}
		for _, cu := range byTool.Customers {
			names = append(names, cu.Name)
			found[search] = append(found[search], fmt.Sprintf("%d %s <%s>", cu.ID, cu.Name, cu.Email))
		}
		if !reflect.DeepEqual(names, want) || byTool.Total != len(want) {
			t.Errorf("search %q found %q (total %d), want %q", search, names, byTool.Total, want)
		}
	}
	return found
}

func decodeIndex(t *testing.T, text string) IndexResult {
	t.Helper()
	var res IndexResult
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatalf("customers_index answered %s: %v", text, err)
	}
	return res
}

// A PostgreSQL database that is not UTF8 is refused, saying why, before the
// example writes anything to it.
func TestPostgresNeedsUTF8(t *testing.T) {
	u, err := url.Parse(pgtest.StartShared(t))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE DATABASE latin1 ENCODING 'LATIN1' LOCALE 'C' TEMPLATE template0`); err != nil {
		t.Fatal(err)
	}
	u.Path = "/latin1"
	st, err := openPostgres(t.Context(), u.String())
	if err == nil {
		st.Close()
		t.Fatal("a LATIN1 database was accepted")
	}
	if !strings.Contains(err.Error(), "LATIN1") || !strings.Contains(err.Error(), "UTF8") {
		t.Errorf("error %q, want it to name LATIN1 and UTF8", err)
	}
	latin1, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer latin1.Close(context.Background())
	var tables int
	if err := latin1.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the refused database has %d tables (%v), want none", tables, err)
	}
}
