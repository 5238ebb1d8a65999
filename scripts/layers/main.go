// Command layers lists the references between the layers of package
// server (ARCHITECTURE.md, "Layers of server/"): for each pair of layers,
// which package-level names, methods and fields one uses from the other,
// and from which files. It type-checks server/ (without its tests) from
// the export data `go list -export` builds.
//
//	go run ./scripts/layers            every pair, with symbols and files
//	go run ./scripts/layers -summary   counts only
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// layerOf names a file's layer by its name, as ARCHITECTURE.md does.
func layerOf(file string) string {
	b := filepath.Base(file)
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(b, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("stream", "jetstream", "headers", "ack_defer", "store.go"):
		return "jetstream"
	case has("raft"):
		return "raft"
	case has("route"):
		return "routes"
	case has("accounts", "imports"):
		return "accounts"
	case has("monitor", "sys.go", "profile"):
		return "monitoring"
	case has("opts", "tls_config", "perms_reload", "auth_conn_types"):
		return "config"
	case has("server.go", "embed_api", "run.go", "signal", "lameduck", "reload", "files.go", "inprocess"):
		return "root"
	}
	return "core"
}

type refs map[string]map[string]bool // symbol -> using files

func main() {
	summary := flag.Bool("summary", false, "print counts only")
	dir := flag.String("dir", "server", "the package directory")
	flag.Parse()
	exports, err := exportData(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fset := token.NewFileSet()
	files, err := parseDir(fset, *dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check("server", fset, files, info)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pairs := map[string]refs{}
	sites := map[string]int{}
	for id, obj := range info.Uses {
		name, ok := symbolName(pkg, obj)
		if !ok {
			continue
		}
		from, to := fset.Position(id.Pos()).Filename, fset.Position(obj.Pos()).Filename
		lf, lt := layerOf(from), layerOf(to)
		if lf == lt {
			continue
		}
		k := lf + " -> " + lt
		if pairs[k] == nil {
			pairs[k] = refs{}
		}
		name += " (" + filepath.Base(to) + ")"
		if pairs[k][name] == nil {
			pairs[k][name] = map[string]bool{}
		}
		pairs[k][name][filepath.Base(from)] = true
		sites[k]++
	}
	for _, k := range sorted(pairs) {
		fmt.Printf("%s: %d symbols, %d use sites\n", k, len(pairs[k]), sites[k])
		if *summary {
			continue
		}
		for _, n := range sorted(pairs[k]) {
			fmt.Printf("    %s  <- %s\n", n, strings.Join(sorted(pairs[k][n]), " "))
		}
	}
}

// symbolName names obj when it is a package-level name, method or field
// of pkg (locals and other packages' names are not layer references).
func symbolName(pkg *types.Package, obj types.Object) (string, bool) {
	if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
		return "", false
	}
	switch o := obj.(type) {
	case *types.Var:
		if o.IsField() {
			return "field " + o.Name(), true
		}
		return o.Name(), o.Parent() == pkg.Scope()
	case *types.Func:
		if r := o.Type().(*types.Signature).Recv(); r != nil {
			return types.TypeString(r.Type(), func(*types.Package) string { return "" }) + "." + o.Name(), true
		}
		return o.Name(), true
	case *types.TypeName, *types.Const:
		return o.Name(), o.Parent() == pkg.Scope()
	}
	return "", false
}

func exportData(dir string) (map[string]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			return exports, nil
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
	}
}

// parseDir parses the package's non-test files for this platform.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	cmd := exec.Command("go", "list", "-f", "{{range .GoFiles}}{{.}}\n{{end}}", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, n := range strings.Fields(string(out)) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
