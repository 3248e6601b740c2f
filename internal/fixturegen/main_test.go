package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// TestFixturesUpToDate fails when the files in fixtures/ are not what the
// data here renders to: someone changed one without the other.
func TestFixturesUpToDate(t *testing.T) {
	bad, err := renderBad()
	if err != nil {
		t.Fatal(err)
	}
	all := []map[string][]byte{bad}
	for _, ds := range datasets() {
		files, err := render(ds)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, files)
	}
	for _, files := range all {
		for name, want := range files {
			got, err := os.ReadFile(filepath.Join("..", "..", "fixtures", name))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("fixtures/%s is out of date (%v); run: go run ./internal/fixturegen", name, err)
			}
		}
	}
}

type shape struct {
	roots    []string
	depth    int
	children map[string][]string
	early    int // records that come before their parent
}

func measure(t *testing.T, recs []*transform.Record) shape {
	t.Helper()
	parent := map[string]string{}
	for _, r := range recs {
		if _, dup := parent[r.ID]; dup {
			t.Fatalf("duplicate id %q", r.ID)
		}
		parent[r.ID] = r.Parent
	}
	sh := shape{children: map[string][]string{}}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Parent == "" {
			sh.roots = append(sh.roots, r.ID)
		} else if _, ok := parent[r.Parent]; !ok {
			t.Fatalf("%q: parent %q is missing", r.ID, r.Parent)
		} else if !seen[r.Parent] {
			sh.early++
		}
		seen[r.ID] = true
		sh.children[r.Parent] = append(sh.children[r.Parent], r.ID)
		d := 0
		for p := r.Parent; p != ""; p = parent[p] {
			if d++; d > len(recs) {
				t.Fatalf("cycle through %q", r.ID)
			}
		}
		sh.depth = max(sh.depth, d)
	}
	return sh
}

func TestDatasets(t *testing.T) {
	byName := map[string][]*transform.Record{}
	for _, ds := range datasets() {
		byName[ds.name] = ds.recs
		t.Run(ds.name+" size", func(t *testing.T) {
			if n := len(ds.recs); n < 40 || n > 60 {
				t.Errorf("%d records, want 40 to 60", n)
			}
		})
	}
	t.Run("folders", func(t *testing.T) {
		sh := measure(t, byName["folders"])
		if !slices.Equal(sh.roots, []string{"home", "srv"}) || sh.depth < 5 {
			t.Errorf("roots %v, depth %d; want home and srv, depth 5 or more", sh.roots, sh.depth)
		}
		var spaces, dots, tags, acls int
		for _, r := range byName["folders"] {
			name := r.Attrs["name"].(*types.AttributeValueMemberS).Value
			if strings.Contains(name, " ") {
				spaces++
			}
			if strings.Contains(name, ".") {
				dots++
			}
			if _, ok := r.Attrs["tags"]; ok {
				tags++
			}
			if _, ok := r.Attrs["acl"]; ok {
				acls++
			}
		}
		if spaces < 3 || dots < 3 || tags < 3 || acls < 3 {
			t.Errorf("names with spaces %d, with dots %d, tags %d, acls %d; want a few of each", spaces, dots, tags, acls)
		}
	})
	t.Run("cars", func(t *testing.T) {
		sh := measure(t, byName["cars"])
		if !slices.Equal(sh.roots, []string{"CM1"}) || sh.depth < 5 {
			t.Errorf("roots %v, depth %d; want CM1, depth 5 or more", sh.roots, sh.depth)
		}
		if kids := sh.children["CM1"]; !slices.Contains(kids, "CM2") || !slices.Contains(kids, "CM20") {
			t.Errorf("CM1's children %v; CM2 and CM20 must be siblings", kids)
		}
	})
	t.Run("org", func(t *testing.T) {
		recs := byName["org"]
		sh := measure(t, recs)
		if len(sh.roots) != 1 || sh.early < 10 {
			t.Errorf("roots %v, %d people before their manager; want one root and at least 10", sh.roots, sh.early)
		}
		var names, nicknames []string
		for _, r := range recs {
			names = append(names, r.Attrs["name"].(*types.AttributeValueMemberS).Value)
			if v, ok := r.Attrs["nickname"]; ok {
				nicknames = append(nicknames, v.(*types.AttributeValueMemberS).Value)
			}
		}
		for _, want := range []string{"Zoë Åström", "Łukasz Żółć", "王芳", "Ngozi Ọ̀kọ́", "José Núñez", "Σωκράτης Παπαδόπουλος"} {
			if !slices.Contains(names, want) {
				t.Errorf("no one named %s", want)
			}
		}
		if !slices.Contains(nicknames, "") || !slices.Contains(nicknames, "🚀 Rocket") {
			t.Errorf("nicknames %q: want an empty one and one with an emoji", nicknames)
		}
	})
}
