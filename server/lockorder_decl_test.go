package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Every mutex outside tests is a lockorder one, so the checker sees it
// and LOCKS.md can list it: no sync.Mutex or sync.RWMutex is declared in
// server/, internal/ or logger/ (but internal/lockorder itself, the
// test-only helpers under internal/testutil, which no server code
// imports, and the Windows syslog's, which LOCKS.md leaves out).
func TestMutexesAreLockorder(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	for _, dir := range []string{".", "../internal", "../logger"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "lockorder" || d.Name() == "testutil") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.HasSuffix(path, "syslog_windows.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex") {
						found = append(found, fset.Position(sel.Pos()).String())
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Fatalf("sync mutexes outside internal/lockorder (declare mu lockorder.Mutex[lockorder.<Class>] and list it in LOCKS.md):\n%s",
			strings.Join(found, "\n"))
	}
}
