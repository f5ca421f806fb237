package main

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestFoldCase(t *testing.T) {
	for in, want := range map[string]string{
		"Ada Lovelace": "ada lovelace",
		"Åke Ärlig":    "åke ärlig",
		"ÅKE":          "åke",
		"Kurt Gödel":   "kurt gödel",
		"Straße":       "strasse", // full folding: ß is ss, which lower() leaves alone
		"STRASSE":      "strasse",
		"ẞ":            "ss", // capital sharp s
		"ΣΩΚΡΆΤΗΣ":     "σωκράτησ",
		"Σωκράτης":     "σωκράτησ", // final sigma folds like any sigma
		"\u212a":       "k",        // Kelvin sign
		"ﬁle":          "file",     // the ligature
		"İ":            "i\u0307",  // dotted capital I: i and a combining dot
		"ǅ":            "ǆ",        // titlecase digraph
		"":             "",
		"100% o'Brien": "100% o'brien",
	} {
		if got := foldCase(in); got != want {
			t.Errorf("foldCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// allRunes is every character text can hold, in order: every valid rune but
// NUL.
func allRunes() string {
	var b strings.Builder
	for r := rune(1); r <= unicode.MaxRune; r++ {
		if utf8.ValidRune(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// foldingRunes is every character that does not fold to itself, each
// followed by an "x", plus the test names: short enough for a database to
// fold in one statement.
func foldingRunes() string {
	var b strings.Builder
	for _, r := range allRunes() {
		if s := string(r); foldCase(s) != s {
			b.WriteString(s + "x")
		}
	}
	b.WriteString("Åke Ärlig, Wolfgang Strauß, Σωκράτης, Kurt Gödel")
	return b.String()
}

// runFoldCaseSQL evaluates the expression of foldCaseSQL's function on s,
// reading the translate and the replaces out of the SQL text, as PostgreSQL
// would run them.
func runFoldCaseSQL(t *testing.T, sql, s string) string {
	t.Helper()
	translate := regexp.MustCompile(`translate\(\$1, '([^']*)', '([^']*)'\)`).FindStringSubmatch(sql)
	if translate == nil {
		t.Fatalf("no translate($1, '…', '…') in %.200s", sql)
	}
	from, to := []rune(translate[1]), []rune(translate[2])
	if len(from) != len(to) {
		t.Fatalf("translate maps %d characters to %d", len(from), len(to))
	}
	mapping := make(map[rune]rune, len(from))
	for i, r := range from {
		if _, dup := mapping[r]; dup {
			t.Fatalf("translate lists %q twice", r)
		}
		mapping[r] = to[i]
	}
	s = strings.Map(func(r rune) rune {
		if m, ok := mapping[r]; ok {
			return m
		}
		return r
	}, s)
	// The replaces follow the translate, innermost first.
	replaces := regexp.MustCompile(`, '([^']*)', '([^']*)'\)`).FindAllStringSubmatch(sql[strings.Index(sql, translate[0])+len(translate[0]):], -1)
	for _, rep := range replaces {
		s = strings.ReplaceAll(s, rep[1], rep[2])
	}
	if len(from) < 1000 || len(replaces) < 50 {
		t.Errorf("translate maps %d characters and %d replace(): Unicode has more that fold", len(from), len(replaces))
	}
	return s
}

// PostgreSQL's fold_case must be foldCase exactly, or the two stores would
// find different customers. Run as PostgreSQL runs it (TestFoldCaseOnBoth
// runs it on PostgreSQL itself), it folds every character of Unicode as
// foldCase does, each alone and each beside its neighbours.
func TestFoldCaseSQLIsFoldCase(t *testing.T) {
	sql := foldCaseSQL()
	for _, s := range []string{allRunes(), foldingRunes()} {
		got, want := runFoldCaseSQL(t, sql, s), foldCase(s)
		if got == want {
			continue
		}
		g, w := []rune(got), []rune(want)
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("fold_case differs from foldCase at character %d: %q, want %q", i, string(g[i:min(i+5, len(g))]), string(w[i:min(i+5, len(w))]))
			}
		}
		t.Fatalf("fold_case gives %d characters, foldCase %d", len(g), len(w))
	}
}

// Folding is what SQLite and PostgreSQL run on every write: one call must
// stay cheap next to the write itself (a few microseconds).
func BenchmarkFoldCase(b *testing.B) {
	for b.Loop() {
		foldCase("Åke Ärlig, Wolfgang Strauß")
	}
}

// foldCaseSQL runs once per PostgreSQL store opened.
func BenchmarkFoldCaseSQL(b *testing.B) {
	for b.Loop() {
		foldCaseSQL()
	}
}
