package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestImportsFlowDownward holds the package order of docs/ARCHITECTURE.md
// against the code: every package is listed in one layer, and its non-test
// imports of this module's packages are all in layers below its own. The
// test servers (internal/testserver/…) are for tests only: no product
// package imports them.
func TestImportsFlowDownward(t *testing.T) {
	layerOf, names := readLayers(t, "docs/ARCHITECTURE.md")
	if len(names) < 5 {
		t.Fatalf("docs/ARCHITECTURE.md lists %d layers; its layers block is broken", len(names))
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Module", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Module     struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		mod := p.Module.Path
		rel := func(path string) string {
			if path == mod {
				return "."
			}
			return strings.TrimPrefix(path, mod+"/")
		}
		name := rel(p.ImportPath)
		if name == "benchmarks" {
			continue // test files only
		}
		seen[name] = true
		own, ok := layerOf[name]
		if !ok {
			t.Errorf("package %s is in no layer of docs/ARCHITECTURE.md: add it to the layer of its job", name)
			continue
		}
		for _, imp := range p.Imports {
			if imp != mod && !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			dep := rel(imp)
			l, ok := layerOf[dep]
			switch {
			case !ok:
				// Reported once, as a package of its own.
			case names[l] == "testservers" || strings.HasPrefix(dep, "internal/testserver/"):
				t.Errorf("%s imports the test server %s: product code never does", name, dep)
			case l <= own:
				t.Errorf("%s (layer %s) imports %s (layer %s): imports flow downward only; move the code, or move the line in docs/ARCHITECTURE.md if the layers are wrong", name, names[own], dep, names[l])
			}
		}
	}
	for name := range layerOf {
		if !seen[name] {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which is no package of this module", name)
		}
	}
}

// readLayers reads the layers block of the architecture page: a line that
// starts in the first column names a layer and its packages; an indented
// line only says more of the one above.
func readLayers(t *testing.T, path string) (map[string]int, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layerOf := map[string]int{}
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "<!-- layers:begin -->"):
			in = true
			continue
		case strings.Contains(line, "<!-- layers:end -->"):
			in = false
		}
		if !in || line == "" || strings.HasPrefix(line, "```") || line[0] == ' ' {
			continue
		}
		fields := strings.Fields(line)
		names = append(names, fields[0])
		for _, f := range fields[1:] {
			if f != "." && !strings.Contains(f, "/") && !isPackageDir(f) {
				break // the description begins
			}
			if prev, dup := layerOf[f]; dup {
				t.Errorf("docs/ARCHITECTURE.md lists %s in layers %s and %s", f, names[prev], fields[0])
			}
			layerOf[f] = len(names) - 1
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return layerOf, names
}

// isPackageDir says whether a word of the layers block names a directory of
// the module (a top-level package such as layouts), not a word of prose.
func isPackageDir(word string) bool {
	fi, err := os.Stat(word)
	return err == nil && fi.IsDir()
}
