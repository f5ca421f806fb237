package adapter_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// standAloneExamples are the examples held to stand alone where pkg.go.dev
// shows them, and to run (// Output). (The server examples share a helper,
// exampleAdapter, and run no server: they are compiled only.)
var standAloneExamples = []string{"WithScope", "WithChangeFeed", "Adapter_Changed", "Reads_watching", "WithBatch"}

// TestExamplesStandAlone reads the package's examples as pkg.go.dev does
// (go/doc): an example shows its function body alone, or, when its file
// holds it and no other example, test or benchmark, the whole file. Each
// of standAloneExamples must then be whole where it is shown: a body may
// use no type, function or variable declared elsewhere among the tests,
// which the reader would not see. It also holds the package doc to naming
// what a per-user server on several instances needs: scopes, a change
// feed, Changed.
func TestExamplesStandAlone(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	declaredIn := map[string]string{} // top-level names of the external test package, by file
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "adapter_test" {
			continue
		}
		files = append(files, f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declaredIn[d.Name.Name] = p
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declaredIn[s.Name.Name] = p
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declaredIn[n.Name] = p
						}
					}
				}
			}
		}
	}
	var names []string
	for _, e := range doc.Examples(files...) {
		names = append(names, e.Name)
		if !slices.Contains(standAloneExamples, e.Name) {
			continue
		}
		if !e.EmptyOutput && e.Output == "" {
			t.Errorf("Example%s has no // Output: it is compiled, not run", e.Name)
		}
		body, ok := e.Code.(*ast.BlockStmt)
		if !ok {
			continue // the whole file is shown
		}
		seen := map[string]bool{}
		ast.Inspect(body, func(n ast.Node) bool {
			if kv, ok := n.(*ast.KeyValueExpr); ok {
				if _, isName := kv.Key.(*ast.Ident); isName {
					// A struct literal's field name (or a map key
					// naming a constant, which is checked as a value).
					ast.Inspect(kv.Value, func(n ast.Node) bool { return checkIdent(t, e.Name, n, body, declaredIn, seen) })
					return false
				}
			}
			if sel, ok := n.(*ast.SelectorExpr); ok {
				ast.Inspect(sel.X, func(n ast.Node) bool { return checkIdent(t, e.Name, n, body, declaredIn, seen) })
				return false // the selected name is a field or a method
			}
			return checkIdent(t, e.Name, n, body, declaredIn, seen)
		})
	}
	for _, want := range standAloneExamples {
		if !slices.Contains(names, want) {
			t.Errorf("no Example%s", want)
		}
	}
	pkg, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[WithScope]", "[WithChangeFeed]", "[Adapter.Changed]"} {
		if !strings.Contains(pkg.Doc.Text(), want) {
			t.Errorf("the package doc (doc.go) does not link %s", want)
		}
	}
}

// checkIdent reports an identifier of an example's body that names a
// top-level declaration of another place among the tests.
func checkIdent(t *testing.T, example string, n ast.Node, body *ast.BlockStmt, declaredIn map[string]string, seen map[string]bool) bool {
	id, ok := n.(*ast.Ident)
	if !ok || seen[id.Name] {
		return true
	}
	if id.Obj != nil {
		if pos := declPos(id.Obj); pos == token.NoPos || (pos >= body.Pos() && pos < body.End()) {
			return true // declared in the body
		}
	}
	if file, ok := declaredIn[id.Name]; ok {
		seen[id.Name] = true
		t.Errorf("Example%s uses %s, declared in %s, which pkg.go.dev does not show with it", example, id.Name, file)
	}
	return true
}

func declPos(o *ast.Object) token.Pos {
	if n, ok := o.Decl.(ast.Node); ok {
		return n.Pos()
	}
	return token.NoPos
}
