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

// runFoldCaseSQL evaluates foldCaseSQL's function on s as PostgreSQL would,
// reading its two paths out of the SQL text: a translate alone for a string
// that is all ASCII, and otherwise a translate followed by replaces.
func runFoldCaseSQL(t *testing.T, sql, s string) string {
	t.Helper()
	translates := regexp.MustCompile(`translate\(\$1, '((?:[^']|'')*)', '((?:[^']|'')*)'\)`).FindAllStringSubmatchIndex(sql, -1)
	if len(translates) != 2 {
		t.Fatalf("%d translate($1, '…', '…') in the SQL, want 2 (ASCII, the rest)", len(translates))
	}
	path := translates[1]
	if len(s) == utf8.RuneCountInString(s) { // octet_length = char_length
		path = translates[0]
	}
	unquote := strings.NewReplacer("''", "'").Replace
	from, to := []rune(unquote(sql[path[2]:path[3]])), []rune(unquote(sql[path[4]:path[5]]))
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
	if path[0] == translates[0][0] {
		return s
	}
	// The replaces follow the second translate, innermost first.
	replaces := regexp.MustCompile(`, '((?:[^']|'')*)', '((?:[^']|'')*)'\)`).FindAllStringSubmatch(sql[path[1]:], -1)
	for _, rep := range replaces {
		s = strings.ReplaceAll(s, unquote(rep[1]), unquote(rep[2]))
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
	var ascii strings.Builder
	for r := rune(1); r <= unicode.MaxASCII; r++ {
		ascii.WriteRune(r)
	}
	for _, s := range []string{allRunes(), foldingRunes(), ascii.String(), "Ada Lovelace", "ADA.LOVELACE@EXAMPLE.COM"} {
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
