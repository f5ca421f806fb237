package main

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"modernc.org/sqlite"
)

// Searching ignores case over all of Unicode, and both databases must find
// the same customers. Neither can be asked to do it: SQLite's lower() and
// NOCASE fold ASCII only, and PostgreSQL's lower() follows the database's
// ctype (ASCII only under "C") and lower-cases rather than folds (it leaves
// "ß" alone, where folding makes "STRASSE" and "Straße" meet).
//
// So the folding is Go's Unicode case folding, foldCase, and each database
// keeps it in generated columns (name_folded, email_folded) that it computes
// itself on every write, whoever writes: SQLite calls foldCase, registered
// below as fold_case(text); PostgreSQL runs fold_case(text), a SQL function
// generated from foldCase's own tables (foldCaseSQL). A search folds its
// string with foldCase and looks it up in the folded columns, so both stores
// compare the very same strings, and a search costs no folding per row.

// foldCase returns s with Unicode full case folding applied: the form in
// which strings that differ only in case are equal ("Åke", "ÅKE" and "åke";
// "Straße" and "STRASSE"). It does not normalize: a name spelled with a
// combining ring (A + U+030A) does not match one with Å.
func foldCase(s string) string {
	return cases.Fold().String(s) // a Caser is not safe for concurrent use: one per call
}

// The SQLite driver offers functions to every connection it opens after
// registration; the schema's generated columns need fold_case from the first.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("fold_case", 1, sqliteFoldCase)
}

// sqliteFoldCase is fold_case(text) on SQLite.
func sqliteFoldCase(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	switch v := args[0].(type) {
	case nil:
		return nil, nil // NULL in, NULL out, like SQLite's own lower()
	case string:
		return foldCase(v), nil
	case []byte:
		return foldCase(string(v)), nil
	}
	return nil, fmt.Errorf("fold_case: %T is not text", args[0])
}

// foldCaseSQL returns the statement that creates fold_case(text) on
// PostgreSQL, computing foldCase with translate() and replace().
//
// Case folding maps each character on its own, regardless of its
// neighbours. About 1,500 characters fold to one other character:
// translate() maps all of them in one pass. About 100 fold to several ("ß"
// to "ss"): one replace() each. What folding produces folds to itself, so
// neither step undoes or feeds the other.
//
// translate() looks each character up in its list from the start, so the
// list opens with every printable character up to U+024F (ASCII and the
// Latin letters, mapped to themselves where they do not fold): the characters of
// most names are found within a few hundred steps, not 1,500. A string
// that is all ASCII (as long in bytes as in characters) only needs A-Z
// lowered, and takes a path of its own, about 80 times cheaper.
//
// fold_case is IMMUTABLE, as a generated column requires; its definition
// follows the Unicode version of golang.org/x/text, and after upgrading
// that, rows written before keep the old folding until rewritten (UPDATE
// customers SET name = name).
func foldCaseSQL() string {
	var from, to strings.Builder
	var expanding []string // pairs: a character, what it folds to
	c := cases.Fold()
	var buf [utf8.UTFMax]byte
	for r := rune(1); r <= unicode.MaxRune; r++ { // text never holds NUL
		if !utf8.ValidRune(r) {
			continue // surrogates
		}
		n := utf8.EncodeRune(buf[:], r)
		folded := string(buf[:n])
		if done, _ := c.Span(buf[:n], true); done != n {
			folded = c.String(folded)
		}
		switch {
		case utf8.RuneCountInString(folded) > 1:
			expanding = append(expanding, string(buf[:n]), folded)
		case folded != string(buf[:n]) || ' ' <= r && r <= lastListedFirst && r != unicode.MaxASCII:
			from.Write(buf[:n])
			to.WriteString(folded)
		}
	}
	full := "translate($1, " + sqlString(from.String()) + ", " + sqlString(to.String()) + ")"
	for i := 0; i < len(expanding); i += 2 {
		full = "replace(" + full + ", " + sqlString(expanding[i]) + ", " + sqlString(expanding[i+1]) + ")"
	}
	ascii := "translate($1, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
	return "CREATE OR REPLACE FUNCTION fold_case(text) RETURNS text\n" +
		"LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n" +
		"AS $fold$ SELECT CASE WHEN octet_length($1) = char_length($1)\n" +
		"THEN " + ascii + "\n" +
		"ELSE " + full + " END $fold$;\n"
}

// lastListedFirst is the last character of the Latin blocks that open
// translate's list in foldCaseSQL whether they fold or not.
const lastListedFirst = '\u024F'

// sqlString quotes s as a SQL string literal (standard_conforming_strings,
// PostgreSQL's default since 9.1: only the quote is special).
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
