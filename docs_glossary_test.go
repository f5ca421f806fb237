package adapter_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The guide speaks to users: the words it relies on are defined once, in
// docs/glossary.md, which every page that uses one links to; and it names
// what users can use, never the package's unexported types and functions or
// the files they live in (docs/architecture.md is where the inside is told).

// notGuides are the pages of docs/ these checks leave alone:
// architecture.md tells contributors how the package works inside, and
// performance.md and many-instances.md report measurements of it.
var notGuides = []string{"docs/architecture.md", "docs/performance.md", "docs/many-instances.md"}

// guidePages returns README.md and the pages of docs/ that are guides.
func guidePages(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, f := range files {
		if !slices.Contains(notGuides, filepath.ToSlash(f)) {
			pages = append(pages, filepath.ToSlash(f))
		}
	}
	return pages
}

// mdParts is a Markdown page split into what a reader reads as text and
// what is code: fenced blocks and inline code spans. Each keeps its line.
type mdParts struct {
	prose []mdLine // text outside fenced blocks, inline code spans blanked
	code  []mdLine // lines of fenced blocks, and each inline code span
}

type mdLine struct {
	n    int
	text string
}

var inlineCode = regexp.MustCompile("`+[^`]+`+")

func splitMarkdown(md []byte) mdParts {
	var p mdParts
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(line, "    ") && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "-") {
			p.code = append(p.code, mdLine{n, line})
			continue
		}
		for _, span := range inlineCode.FindAllString(line, -1) {
			p.code = append(p.code, mdLine{n, strings.Trim(span, "`")})
		}
		p.prose = append(p.prose, mdLine{n, inlineCode.ReplaceAllStringFunc(line, func(s string) string {
			return strings.Repeat(" ", len(s))
		})})
	}
	return p
}

// glossaryTerms returns the terms docs/glossary.md defines: its level-2
// headings, in order.
func glossaryTerms(t *testing.T) []string {
	t.Helper()
	md, err := os.ReadFile("docs/glossary.md")
	if err != nil {
		t.Fatal(err)
	}
	var terms []string
	fenced := false
	for line := range strings.Lines(string(md)) {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if term, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "## "); ok && !fenced {
			terms = append(terms, strings.Trim(strings.TrimSpace(term), "`"))
		}
	}
	return terms
}

// anchor is the fragment GitHub gives a heading: lower case, without
// punctuation other than "-" and "_", spaces made hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"GET stream":                        "get-stream",
		"2025-11-25":                        "2025-11-25",
		"resources/subscribe":               "resourcessubscribe",
		"Resource-not-found":                "resource-not-found",
		"Keys: what was read, what changed": "keys-what-was-read-what-changed",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// termPattern matches a use of term: as a word, in any case, also plural.
func termPattern(term string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^\w/-])` + regexp.QuoteMeta(term) + `(s|es)?($|[^\w/-])`)
}

// TestGlossary checks docs/glossary.md: each term defined once and used by
// some guide page, and every link into it, from any page, leading to a
// term.
func TestGlossary(t *testing.T) {
	terms := glossaryTerms(t)
	if len(terms) < 10 {
		t.Fatalf("docs/glossary.md defines %d terms (its ## headings): %q", len(terms), terms)
	}
	anchors := map[string]string{}
	for _, term := range terms {
		a := anchor(term)
		if other, ok := anchors[a]; ok {
			t.Errorf("docs/glossary.md defines %q and %q: one term, defined twice", other, term)
		}
		anchors[a] = term
	}

	pages := guidePages(t)
	all, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	link := regexp.MustCompile(`glossary\.md(#[^)\s]*)?\)|\]\((#[^)\s]+)\)`)
	for _, page := range append([]string{"README.md"}, all...) {
		page = filepath.ToSlash(page)
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		parts := splitMarkdown(md)
		for _, l := range parts.prose {
			for _, m := range link.FindAllStringSubmatch(l.text, -1) {
				fragment := m[1]
				if m[2] != "" { // a link within the page
					if page != "docs/glossary.md" {
						continue
					}
					fragment = m[2]
				}
				if fragment != "" && anchors[strings.TrimPrefix(fragment, "#")] == "" {
					t.Errorf("%s:%d links to the glossary's %s, which is no term of it", page, l.n, fragment)
				}
			}
		}
		if page == "docs/glossary.md" || !slices.Contains(pages, page) {
			continue
		}
		text := joinLines(parts.prose) + "\n" + joinLines(parts.code)
		for _, term := range terms {
			if termPattern(term).MatchString(text) {
				used[term] = true
			}
		}
	}
	for _, term := range terms {
		if !used[term] {
			t.Errorf("docs/glossary.md defines %q, which no guide page uses", term)
		}
	}
}

func joinLines(lines []mdLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestGuidesLinkTheGlossary: a guide page that uses a term of the glossary
// links to it, so that a reader who does not know the word can look it up.
func TestGuidesLinkTheGlossary(t *testing.T) {
	terms := glossaryTerms(t)
	for _, page := range guidePages(t) {
		if page == "docs/glossary.md" {
			continue
		}
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		parts := splitMarkdown(md)
		text := joinLines(parts.prose) + "\n" + joinLines(parts.code)
		var usedTerms []string
		for _, term := range terms {
			if termPattern(term).MatchString(text) {
				usedTerms = append(usedTerms, term)
			}
		}
		target := "glossary.md"
		if page == "README.md" {
			target = "docs/glossary.md"
		}
		if len(usedTerms) > 0 && !regexp.MustCompile(`\]\(`+regexp.QuoteMeta(target)+`(#[^)]*)?\)`).Match(md) {
			t.Errorf("%s uses terms of the glossary (%s) but does not link to %s", page, strings.Join(usedTerms, ", "), target)
		}
	}
}

// internals lists what the root package does not export: the unexported
// names it declares at top level and the unexported methods of its types,
// from the package's own sources; and its files. (Fields are left out:
// theirs are the names of the JSON they hold, such as uri or
// description.)
type internals struct {
	names map[string]string // name -> what it is, for the message
	files map[string]bool   // file names of the root package, tests too
}

func rootInternals(t *testing.T) internals {
	t.Helper()
	in := internals{names: map[string]string{}, files: map[string]bool{}}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		in.files[name] = true
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "adapter" {
			continue
		}
		add := func(id *ast.Ident, what string) {
			if id != nil && id.Name != "_" && !id.IsExported() {
				in.names[id.Name] = fmt.Sprintf("%s (%s)", what, name)
			}
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name, "an unexported function")
				} else {
					add(d.Name, "an unexported method")
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						add(s.Name, "an unexported type")
					case *ast.ValueSpec:
						for _, id := range s.Names {
							add(id, "an unexported "+d.Tok.String())
						}
					}
				}
			}
		}
	}
	if len(in.names) < 50 {
		t.Fatalf("found %d unexported names in the root package: is this the repository root?", len(in.names))
	}
	return in
}

// isCompound reports whether an identifier is more than one lower-case
// word (camelCase, or with a digit or underscore), which no English text
// spells by chance.
func isCompound(name string) bool {
	return strings.ContainsFunc(name, func(r rune) bool { return unicode.IsUpper(r) || unicode.IsDigit(r) || r == '_' })
}

var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// wireWords returns the JSON keys of mcp-go's mcp package (inputSchema,
// outputSchema, ...): words of the protocol, which a guide uses in their
// own right even where an unexported name of the package spells one.
func wireWords(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/mark3labs/mcp-go/mcp").Output()
	if err != nil {
		t.Skipf("go list github.com/mark3labs/mcp-go/mcp: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]bool{}
	jsonKey := regexp.MustCompile(`json:"([A-Za-z0-9_]+)`)
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if field, ok := n.(*ast.Field); ok && field.Tag != nil {
				if m := jsonKey.FindStringSubmatch(field.Tag.Value); m != nil {
					words[m[1]] = true
				}
			}
			return true
		})
	}
	if !words["inputSchema"] {
		t.Fatalf("found no inputSchema among mcp-go's JSON keys (%d keys)", len(words))
	}
	return words
}

// TestGuidesNameNoInternals: a guide page names no unexported type,
// function, method or field of the root package, and none of its files.
// A compound name (errorBox, liveRegistry) counts wherever it appears; a
// one-word name (query, outbox) only where it is code: the whole of an
// inline code span, or qualified in code (adapter.query, a.outbox). Files
// count as a bare name (http.go), not as a path into another folder.
func TestGuidesNameNoInternals(t *testing.T) {
	in := rootInternals(t)
	wire := wireWords(t)
	for _, page := range append(guidePages(t), "docs/glossary.md") {
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, finding := range in.namedIn(md, wire) {
			t.Errorf("%s:%s", page, finding)
		}
	}

	// The check itself: a page naming a compound internal, a one-word one
	// qualified in code, and a file, is caught three times.
	var compound, word, file string
	for name := range in.names {
		switch {
		case isCompound(name) && !wire[name] && compound == "":
			compound = name
		case !isCompound(name) && word == "":
			word = name
		}
	}
	for name := range in.files {
		file = name
		break
	}
	page := fmt.Sprintf("# A page\n\nThe %s does it, in %s.\n\n```go\nadapter.%s(ctx)\n```\n", compound, file, word)
	if got := in.namedIn([]byte(page), wire); len(got) != 3 {
		t.Errorf("the check found %q in a page naming %s, %s and adapter.%s: want three findings", got, compound, file, word)
	}
}

// namedIn returns where md names an internal, as "line: what".
func (in internals) namedIn(md []byte, wire map[string]bool) []string {
	qualified := regexp.MustCompile(`\b(adapter|a)\.([a-z][A-Za-z0-9_]*)`)
	goFile := regexp.MustCompile(`(^|[^\w/.-])([\w-]+\.go)\b`)
	var found []string
	report := func(l mdLine, name, what string) {
		found = append(found, fmt.Sprintf("%d: names %s, %s", l.n, name, what))
	}
	parts := splitMarkdown(md)
	for _, l := range append(slices.Clone(parts.prose), parts.code...) {
		for _, m := range goFile.FindAllStringSubmatch(l.text, -1) {
			if in.files[m[2]] {
				report(l, m[2], "a file of the root package")
			}
		}
		for _, id := range identifier.FindAllString(l.text, -1) {
			if what, ok := in.names[id]; ok && isCompound(id) && !wire[id] {
				report(l, id, what)
			}
		}
	}
	for _, l := range parts.code {
		for _, m := range qualified.FindAllStringSubmatch(l.text, -1) {
			if what, ok := in.names[m[2]]; ok && !isCompound(m[2]) {
				report(l, m[0], what)
			}
		}
	}
	return found
}
