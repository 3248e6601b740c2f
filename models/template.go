package models

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/treeport/treeport/layouts"
)

// A template is the value of one attribute of a table model, built from the
// node: literal text around placeholders, as in NODE#{id} or {root}#{shard}.
// The placeholders are the node's parts:
//
//	{id}      the node's id
//	{parent}  its parent's id (the attribute is absent on a root)
//	{root}    its tree's root id
//	{path}    the ids from the root to the node, joined by the delimiter
//	{inner}   the ids strictly between the root and the node, each followed
//	          by the delimiter ("" for a child of the root)
//	{depth}   its depth, 0 at the root
//	{shard}   sharded-path's k, 1 … S
//	{ancestor}        closure: the id of the row's ancestor (the node's own
//	                  id on its own row)
//	{relative_depth}  closure: how many levels the ancestor is above the
//	                  node (0 on the node's own row); in a template that is
//	                  text (S), written with width digits, zero-padded, so
//	                  that text order is number order
//	{key}, {child}    prefix: the row's Key and Child as the prefix layout
//	                  writes them (an object row: ¦a¦b and ¦; a listing
//	                  row: ¦a¦ and b)
//	{subpath}         the ids below the root down to the node, joined by the
//	                  delimiter, no trailing delimiter ("" for a root)
//	{parent_subpath}  the parent's {subpath}: the ids strictly between the
//	                  root and the node, joined, no trailing delimiter (""
//	                  for a root and a child of a root)
//	{name}            path ids: the node's name, its id's last segment
//	{param:NAME}      a value the command gives (--model-param NAME=VALUE),
//	                  the same for every node: bound into literal text when
//	                  the model is loaded (bind)
//
// A template is read back by matching its literal text: each placeholder
// but the last ends at the first occurrence of the literal text after it,
// which is why an id holding that text is refused at import (checkIDs).
type template struct {
	text  string
	parts []tmplPart
	// seps is the literal text after each placeholder of the node that
	// is followed by text, as parsed (before the parameters are bound):
	// no id may hold it (separators); pseps is that of each parameter,
	// which its value may not hold.
	seps  []string
	pseps map[string][]string // seps of each parameter, by its ph
	// params are the parameters the template named (bind has replaced
	// them with their values), and pre and suf the literal text before
	// its first placeholder and after its last once bound: the part of a
	// value that says which tenant an item is of (fixedEnds).
	params   []string
	pre, suf string
	// width is the digits {relative_depth} is written with, zero-padded;
	// 0 writes the number as it is (an N attribute, the base's own).
	width int
}

// tmplPart is literal text (ph == "") or a placeholder; a parameter,
// before it is bound, is ph "param:NAME".
type tmplPart struct {
	lit string
	ph  string
}

// paramPrefix starts a parameter placeholder: {param:NAME}.
const paramPrefix = "param:"

// paramName is what a parameter's name may be.
var paramName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// isParam reports whether placeholder ph is a parameter, and its name.
func isParam(ph string) (string, bool) { return strings.CutPrefix(ph, paramPrefix) }

// The placeholders.
const (
	phID     = "id"
	phParent = "parent"
	phRoot   = "root"
	phPath   = "path"
	phInner  = "inner"
	phDepth  = "depth"
	phShard  = "shard"
	// closure's
	phAncestor = "ancestor"
	phRelDepth = "relative_depth"
	// prefix's
	phKey   = "key"
	phChild = "child"
	// the path below the root, without a trailing delimiter
	phSubpath       = "subpath"
	phParentSubpath = "parent_subpath"
	// path ids': the node's name, its path id's last segment
	phName = "name"
)

var placeholders = []string{phID, phParent, phRoot, phPath, phInner, phSubpath, phParentSubpath, phDepth, phShard, phAncestor, phRelDepth, phKey, phChild, phName}

// parseTemplate parses a template's text. It fails on an unknown or
// unclosed placeholder, an empty template, and two placeholders (or
// parameters) with no literal text between them (which could not be told
// apart when read back). A template of constant text and parameters alone
// is parsed: where it may stand is the model's to say.
func parseTemplate(text string) (template, error) {
	t := template{text: text}
	rest := text
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			t.parts = append(t.parts, tmplPart{lit: rest})
			break
		}
		if open > 0 {
			t.parts = append(t.parts, tmplPart{lit: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return t, fmt.Errorf("template %q: %q is not closed by '}'", text, rest[open:])
		}
		ph := rest[open+1 : open+end]
		known := slices.Contains(placeholders, ph)
		if name, ok := isParam(ph); ok {
			if !paramName.MatchString(name) {
				return t, fmt.Errorf("template %q: {%s}: a parameter's name is a letter, then up to 63 letters, digits, '_' or '-'", text, ph)
			}
			known = true
			if !slices.Contains(t.params, name) {
				t.params = append(t.params, name)
			}
		}
		if !known {
			return t, fmt.Errorf("template %q: unknown placeholder {%s}: use {%s}, or {param:NAME} for a value given with --model-param NAME=VALUE", text, ph, strings.Join(placeholders, "}, {"))
		}
		if n := len(t.parts); n > 0 && t.parts[n-1].ph != "" {
			return t, fmt.Errorf("template %q: {%s} follows {%s} with no text between them, so they could not be told apart when read back: put literal text between them, such as #", text, ph, t.parts[n-1].ph)
		}
		t.parts = append(t.parts, tmplPart{ph: ph})
		rest = rest[open+end+1:]
	}
	if text == "" {
		return t, fmt.Errorf("template is empty: give literal text and placeholders, such as \"NODE#{id}\"")
	}
	for i := 0; i+1 < len(t.parts); i++ {
		ph := t.parts[i].ph
		if _, param := isParam(ph); param {
			// Where the parameter's value ends: the value may not hold
			// it (an id is not read there).
			if t.pseps == nil {
				t.pseps = map[string][]string{}
			}
			t.pseps[ph] = append(t.pseps[ph], t.parts[i+1].lit)
		} else if ph != "" {
			t.seps = append(t.seps, t.parts[i+1].lit)
		}
	}
	return t, nil
}

// bind replaces the template's parameters with their values, as literal
// text. It returns the name of the first parameter params does not hold.
func (t template) bind(params map[string]string) (template, string) {
	if len(t.params) == 0 {
		t.pre, t.suf = t.fixedEnds()
		return t, ""
	}
	var parts []tmplPart
	for _, p := range t.parts {
		if name, ok := isParam(p.ph); ok {
			v, set := params[name]
			if !set {
				return t, name
			}
			p = tmplPart{lit: v}
		}
		if n := len(parts); n > 0 && p.ph == "" && parts[n-1].ph == "" {
			parts[n-1].lit += p.lit
			continue
		}
		parts = append(parts, p)
	}
	t.parts = parts
	t.pre, t.suf = t.fixedEnds()
	return t, ""
}

// fixedEnds is the literal text before the template's first placeholder
// and after its last; a constant template is all pre.
func (t template) fixedEnds() (pre, suf string) {
	n := len(t.parts)
	if n > 0 && t.parts[0].ph == "" {
		pre = t.parts[0].lit
	}
	if n > 1 && t.parts[n-1].ph == "" {
		suf = t.parts[n-1].lit
	}
	return pre, suf
}

// constant reports whether the template holds no placeholder of the node:
// literal text and parameters alone.
func (t template) constant() bool { return len(t.uses()) == 0 }

// tenantOf reports whether s has the template's fixed ends, those its
// parameters are part of: an item of another tenant (another value of a
// parameter) does not.
func (t template) tenantOf(s string) bool {
	if t.constant() {
		return s == t.pre
	}
	return len(s) >= len(t.pre)+len(t.suf) && strings.HasPrefix(s, t.pre) && strings.HasSuffix(s, t.suf)
}

// uses returns the template's placeholders of the node, in order (not its
// parameters).
func (t template) uses() []string {
	var ps []string
	for _, p := range t.parts {
		if _, param := isParam(p.ph); p.ph != "" && !param {
			ps = append(ps, p.ph)
		}
	}
	return ps
}

// has reports whether the template uses placeholder ph.
func (t template) has(ph string) bool {
	for _, p := range t.parts {
		if p.ph == ph {
			return true
		}
	}
	return false
}

// bare reports whether the template is one placeholder and nothing else.
func (t template) bare() bool { return len(t.parts) == 1 && t.parts[0].ph != "" }

// mayBeEmpty reports whether the template can render as "": it is made of
// placeholders that can be empty alone ({inner}, {parent_subpath}: for a
// root and a child of a root; {subpath}: for a root), or of literal text
// that is empty (a parameter given ""); every other placeholder holds at
// least an id or a digit.
func (t template) mayBeEmpty() bool {
	for _, p := range t.parts {
		if p.ph == "" && p.lit == "" {
			continue
		}
		if p.ph != phInner && p.ph != phSubpath && p.ph != phParentSubpath {
			return false
		}
	}
	return len(t.parts) > 0
}

// emptyFor says for which nodes the template renders "": the deepest
// depth at which it does (0: roots; 1: roots and their children).
func (t template) emptyFor() int {
	d := 0
	for _, p := range t.parts {
		if p.ph == phInner || p.ph == phParentSubpath {
			d = 1
		}
	}
	return d
}

// endsWithPath reports whether the template ends with {path} or {inner}, so
// that a prefix of a path renders as a prefix of the value (begins_with).
func (t template) endsWithPath() bool {
	n := len(t.parts)
	return n > 0 && (t.parts[n-1].ph == phPath || t.parts[n-1].ph == phInner)
}

// separators returns the literal text after each placeholder that is
// followed by one: an id holding it would make the template ambiguous.
// A parameter counts as a placeholder, so that the text after an id ends
// it whatever the parameter's value (an id "a#b" under {id}#{param:t} with
// t = "x" would otherwise read as id "a" of tenant "b#x").
func (t template) separators() []string { return t.seps }

// paramSeps returns the literal text after parameter name wherever it is
// followed by text: its value may not hold it.
func (t template) paramSeps(name string) []string { return t.pseps[paramPrefix+name] }

// nodeVals are a node's placeholders, or those read back from an item. A
// path is kept as its ids.
type nodeVals struct {
	id, parent, root string
	path             []string // root first, node last
	innerIDs         []string // {inner} or {parent_subpath} read back, before the path is known
	subIDs           []string // {subpath} read back, before the path is known
	depth, shard     int
	ancestor         string // closure's, of one row
	relDepth         int
	key, child       string // prefix's, of one row
	name             string // path ids': the path id's last segment
	has              map[string]bool
}

func (v *nodeVals) set(ph string) {
	if v.has == nil {
		v.has = map[string]bool{}
	}
	v.has[ph] = true
}

// valsOf returns the placeholders of a node.
func valsOf(id, parent string, path []string, shards int) nodeVals {
	v := nodeVals{id: id, parent: parent, root: path[0], path: path, depth: len(path) - 1}
	for _, ph := range []string{phID, phRoot, phPath, phInner, phSubpath, phParentSubpath, phDepth} {
		v.set(ph)
	}
	if parent != "" {
		v.set(phParent)
	}
	if shards > 0 {
		v.shard = layouts.Shard(id, shards)
		v.set(phShard)
	}
	return v
}

// render builds the template's value from v; false when v lacks one of
// its placeholders (a root's {parent}).
func (t template) render(v *nodeVals, delim string) (string, bool) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.ph == "" {
			b.WriteString(p.lit)
			continue
		}
		if !v.has[p.ph] {
			return "", false
		}
		switch p.ph {
		case phID:
			b.WriteString(v.id)
		case phParent:
			b.WriteString(v.parent)
		case phRoot:
			b.WriteString(v.root)
		case phPath:
			b.WriteString(strings.Join(v.path, delim))
		case phInner:
			for _, id := range v.inner() {
				b.WriteString(id)
				b.WriteString(delim)
			}
		case phParentSubpath:
			b.WriteString(strings.Join(v.inner(), delim))
		case phSubpath:
			sub := v.subIDs
			if len(v.path) > 0 {
				sub = v.path[1:]
			}
			b.WriteString(strings.Join(sub, delim))
		case phDepth:
			b.WriteString(strconv.Itoa(v.depth))
		case phShard:
			b.WriteString(strconv.Itoa(v.shard))
		case phAncestor:
			b.WriteString(v.ancestor)
		case phKey:
			b.WriteString(v.key)
		case phChild:
			b.WriteString(v.child)
		case phName:
			b.WriteString(v.name)
		case phRelDepth:
			b.WriteString(padded(v.relDepth, t.width))
		}
	}
	return b.String(), true
}

// inner is the ids strictly between the root and the node.
func (v *nodeVals) inner() []string {
	if n := len(v.path); n > 2 {
		return v.path[1 : n-1]
	} else if n > 0 {
		return nil
	}
	return v.innerIDs
}

// padded is n in decimal, zero-padded to width digits (width 0: as it is).
func padded(n, width int) string {
	s := strconv.Itoa(n)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// renderPrefix renders the template for every node below the ids of
// prefix (root first), for a begins_with: the template must end with {path}
// or {inner}, which render as the ids of prefix each followed by the
// delimiter ({inner} without the root).
func (t template) renderPrefix(prefix []string, delim string) (string, bool) {
	if !t.endsWithPath() || len(prefix) == 0 {
		return "", false
	}
	var b strings.Builder
	v := nodeVals{root: prefix[0], id: prefix[len(prefix)-1]}
	v.set(phRoot)
	for _, p := range t.parts[:len(t.parts)-1] {
		if p.ph == "" {
			b.WriteString(p.lit)
			continue
		}
		if p.ph != phRoot {
			return "", false
		}
		b.WriteString(v.root)
	}
	ids := prefix
	if t.parts[len(t.parts)-1].ph == phInner {
		ids = prefix[1:]
	}
	for _, id := range ids {
		b.WriteString(id)
		b.WriteString(delim)
	}
	return b.String(), true
}

// match reads s back through the template into v, and reports whether it
// fits. A placeholder read twice (from two attributes) must agree.
func (t template) match(s string, v *nodeVals, delim string) bool {
	rest := s
	for i, p := range t.parts {
		if p.ph == "" {
			if !strings.HasPrefix(rest, p.lit) {
				return false
			}
			rest = rest[len(p.lit):]
			continue
		}
		var val string
		if i+1 < len(t.parts) {
			end := strings.Index(rest, t.parts[i+1].lit)
			if end < 0 {
				return false
			}
			val, rest = rest[:end], rest[end:]
		} else {
			val, rest = rest, ""
		}
		if !v.put(p.ph, val, delim, t.width) {
			return false
		}
	}
	return rest == ""
}

// put sets placeholder ph from its text, checking it against what v
// already holds. width is the digits of a zero-padded {relative_depth}.
func (v *nodeVals) put(ph, val, delim string, width int) bool {
	switch ph {
	case phRelDepth:
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || padded(n, width) != val {
			return false
		}
		if v.has[ph] && v.relDepth != n {
			return false
		}
		v.relDepth = n
	case phDepth, phShard:
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || strconv.Itoa(n) != val {
			return false
		}
		old := &v.depth
		if ph == phShard {
			old = &v.shard
		}
		if v.has[ph] && *old != n {
			return false
		}
		*old = n
	case phSubpath, phParentSubpath:
		// The ids joined, no trailing delimiter; "" is none.
		var ids []string
		if val != "" {
			ids = strings.Split(val, delim)
		}
		if slices.Contains(ids, "") {
			return false
		}
		if ph == phParentSubpath {
			if (v.has[phInner] || v.has[phParentSubpath]) && !equalIDs(v.innerIDs, ids) {
				return false
			}
			v.innerIDs = ids
			v.set(phInner)
			break
		}
		if v.has[phSubpath] && !equalIDs(v.subIDs, ids) {
			return false
		}
		v.subIDs = ids
	case phPath, phInner:
		var ids []string
		if ph == phPath {
			if val == "" {
				return false
			}
			ids = strings.Split(val, delim)
		} else {
			if val != "" && !strings.HasSuffix(val, delim) {
				return false
			}
			ids = strings.Split(val, delim)
			ids = ids[:len(ids)-1] // the text after the last delimiter, ""
		}
		for _, id := range ids {
			if id == "" {
				return false
			}
		}
		if ph == phInner {
			if (v.has[phInner] || v.has[phParentSubpath]) && !equalIDs(v.innerIDs, ids) {
				return false
			}
			v.innerIDs = ids
			v.set(phParentSubpath)
			break
		}
		if v.has[phPath] && !equalIDs(v.path, ids) {
			return false
		}
		v.path = ids
	default:
		if val == "" {
			return false
		}
		old := map[string]*string{phID: &v.id, phParent: &v.parent, phRoot: &v.root, phAncestor: &v.ancestor, phKey: &v.key, phChild: &v.child, phName: &v.name}[ph]
		if v.has[ph] && *old != val {
			return false
		}
		*old = val
	}
	v.set(ph)
	return true
}

func equalIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// consistent reports whether what v read agrees with the path it read or
// derived: the ids between the root and the node, and those below the
// root, are the path's (an item whose {path} and {parent_subpath} name
// two places does not read).
func (v *nodeVals) consistent() bool {
	if !v.has[phPath] {
		return true
	}
	n := len(v.path)
	if v.has[phInner] && n > 0 {
		var inner []string
		if n > 2 {
			inner = v.path[1 : n-1]
		}
		if !equalIDs(inner, v.innerIDs) && !(n <= 2 && len(v.innerIDs) == 0) {
			return false
		}
	}
	if v.has[phSubpath] && n > 0 && !equalIDs(v.path[1:], v.subIDs) && !(n == 1 && len(v.subIDs) == 0) {
		return false
	}
	if v.has[phID] && n > 0 && v.path[n-1] != v.id || v.has[phRoot] && n > 0 && v.path[0] != v.root {
		return false
	}
	return true
}

// derive fills in what v's placeholders imply: the path from the root, the
// ids between and the id; the id, parent, root and depth from the path; and
// a root's when absentOnRoot attributes are missing and the id is known
// (root true).
func (v *nodeVals) derive(root bool, shards int) {
	if !v.has[phPath] && v.has[phSubpath] && v.has[phRoot] {
		v.path = append([]string{v.root}, v.subIDs...)
		v.set(phPath)
	}
	if !v.has[phPath] && v.has[phInner] && v.has[phRoot] && v.has[phID] {
		v.path = append(append([]string{v.root}, v.innerIDs...), v.id)
		v.set(phPath)
	}
	if !v.has[phPath] && root && v.has[phID] {
		v.path = []string{v.id}
		v.set(phPath)
	}
	if v.has[phPath] {
		n := len(v.path)
		for ph, val := range map[string]string{phID: v.path[n-1], phRoot: v.path[0]} {
			if !v.has[ph] {
				v.put(ph, val, "", 0)
			}
		}
		if !v.has[phDepth] {
			v.depth = n - 1
			v.set(phDepth)
		}
		if !v.has[phParent] && n > 1 {
			v.parent = v.path[n-2]
			v.set(phParent)
		}
		if !v.has[phInner] {
			if n > 2 {
				v.innerIDs = v.path[1 : n-1]
			}
			v.set(phInner)
			v.set(phParentSubpath)
		}
		if !v.has[phSubpath] {
			v.subIDs = v.path[1:]
			v.set(phSubpath)
		}
	}
	if !v.has[phShard] && shards > 0 && v.has[phID] {
		v.shard = layouts.Shard(v.id, shards)
		v.set(phShard)
	}
}
