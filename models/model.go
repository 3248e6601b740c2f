package models

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// A table model describes a table treeport did not design (docs/MODELS.md):
// its base layout, whose queries it answers, and for the table and each
// index the key attributes with value templates built from the node
// (template.go), an optional type field that tells the tree's items from
// the table's other items, and each index's projection.
//
// A model is a Layout like the others: it writes the base layout's items
// under its own attribute names and values, reads them back through the
// same templates, and answers queries by running the base layout's with
// its reads translated (modelReads), so every command that takes a Layout
// takes a model.

// modelJSON is the model file.
type modelJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Layout      string `json:"layout"`
	Delimiter   string `json:"delimiter"`
	Shards      int    `json:"shards"`
	// issue 25's: ids that are paths, and inner nodes without items
	PathIDs       bool `json:"path_ids"`
	ImplicitInner bool `json:"implicit_inner"`
	// closure's
	RelativeDepthDigits int             `json:"relative_depth_digits"`
	ClosureCopy         json.RawMessage `json:"closure_copy"`
	TypeField           *typeFieldJSON  `json:"type_field"`
	Table               tableJSON       `json:"table"`
	Indexes             []indexJSON     `json:"indexes"`
	Attributes          []attributeJSON `json:"attributes"`
}

type typeFieldJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type tableJSON struct {
	PartitionKey *attributeJSON `json:"partition_key"`
	SortKey      *attributeJSON `json:"sort_key"`
}

type indexJSON struct {
	Name         string          `json:"name"`
	Serves       string          `json:"serves"`
	PartitionKey *attributeJSON  `json:"partition_key"`
	SortKey      *attributeJSON  `json:"sort_key"`
	Projection   *projectionJSON `json:"projection"`
	Sparse       bool            `json:"sparse"`
}

type projectionJSON struct {
	Type             string   `json:"type"`
	NonKeyAttributes []string `json:"non_key_attributes"`
}

type attributeJSON struct {
	Name         string `json:"name"`
	Template     string `json:"template"`
	Type         string `json:"type"`
	AbsentOnRoot bool   `json:"absent_on_root"`
}

// modelAttr is one attribute a model writes.
type modelAttr struct {
	name         string
	tmpl         template
	num          bool // N; else S
	absentOnRoot bool
	where        string // the field that declared it first, for messages
	// omitEmpty: a key of sparse indexes alone (not of the table, nor of
	// another index), so that an empty value leaves it off the item, and
	// the item out of those indexes.
	omitEmpty bool
}

// modelKey is one key of the table or of an index, for the empty-key
// check: the attribute, its role and where it is a key.
type modelKey struct {
	a      *modelAttr
	role   string // "partition" or "sort"
	where  string // "the table" or "index NAME"
	sparse bool
}

// modelIndex is one index of a model, serving one of the base layout's.
type modelIndex struct {
	name, serves string
	pk, sk       *modelAttr
	projection   types.ProjectionType
	include      []string
	sparse       bool
}

// projects reports whether the index's items carry attribute name.
func (x *modelIndex) projects(name string, m *modelLayout) bool {
	switch {
	case x == nil, x.projection == types.ProjectionTypeAll:
		return true
	case x.pk.name == name, x.sk != nil && x.sk.name == name,
		m.pk.name == name, m.sk != nil && m.sk.name == name:
		return true
	}
	return slices.Contains(x.include, name)
}

// modelLayout is a table model as a Layout.
type modelLayout struct {
	name, file string
	digest     string         // Digest
	base       layouts.Layout // with private attribute names (modelPrivate)
	baseName   string
	delim      string
	shards     int
	typeName   string
	typeValue  string

	pk, sk  *modelAttr
	indexes []*modelIndex
	keys    []modelKey        // every key of the table and its indexes
	spec    layouts.TableSpec // Table(), built once for Items' CheckKeys
	attrs   []*modelAttr      // every attribute, each once
	byName  map[string]*modelAttr

	// baseAttrs maps the base's private attribute names to their
	// canonical templates; baseIndex maps its index names to their keys.
	baseAttrs map[string]baseAttr
	baseTable layouts.TableSpec
	seps      []string // text no id may hold

	// closure's: digits is the width of {relative_depth} in a text
	// template, and tooDeep the one error of a node too deep for it (one
	// value, so that a subtree below a node too deep is one problem).
	closure bool
	digits  int
	tooDeep error
	// prefix's: the model describes each of the prefix layout's two rows
	// (the object row, the listing row) by templates of its Key and Child.
	prefix bool

	// pathIDs: a node's id is its path, its names joined by delim, and
	// its parent the id without the last name. implicitInner: a node
	// without attributes that has children has no item. fullPath: the
	// table's sort key is the whole path under a constant partition key
	// (pkConst), after the literal text skPrefix (model_fullpath.go).
	pathIDs, implicitInner bool
	fullPath               bool
	pkConst, skPrefix      string
	// located: the table is keyed by the node's name, and an index by its
	// root and the names between (model_located.go); only leaves have
	// items.
	located bool
	// params are the parameters the model names, with their values;
	// tenantKeys the table's keys whose templates hold parameters or
	// constant text alone: an item whose key does not have their fixed
	// text is another tenant's (foreign).
	params     map[string]string
	tenantKeys []*modelAttr
}

type baseAttr struct {
	canon string
	tmpl  template
	num   bool
}

var _ layouts.Model = (*modelLayout)(nil)

// Base is the layout the model's items are the items of.
func (m *modelLayout) Base() layouts.Layout { return m.base }

// CheckNode returns what is wrong with the node's ids, depth and key
// values under the model, for layouts.Check.
func (m *modelLayout) CheckNode(s *transform.Stats) []error {
	var errs []error
	if err := m.checkIDs([]string{s.ID}); err != nil {
		errs = append(errs, err)
	}
	if err := m.checkPathID(s.ID, s.ParentID); err != nil {
		errs = append(errs, err)
	}
	if m.located && s.Children > 0 && s.AttrBytes > 0 {
		errs = append(errs, m.innerAttrsError(s.ID))
	}
	if m.implicitInner && s.Children > 0 && s.AttrBytes == 0 {
		return errs // no item: no key to be empty
	}
	if err := m.checkDepth(s.Depth); err != nil {
		errs = append(errs, err)
	}
	return append(errs, m.emptyKeys(s)...)
}

// modelPrivate prefixes the base layout's attribute names inside a model:
// the base's items never reach a table, and the prefix keeps its names
// from those of the user's attributes.
const modelPrivate = "\x00"

// canonTemplates are the templates of the base layouts' attributes.
var canonTemplates = map[string]map[string]string{
	layouts.PathName:      {"Id": "{id}", "ParentId": "{parent}", "TreeId": "{root}", "Path": "{path}", "Depth": "{depth}"},
	layouts.ShardedName:   {"Id": "{id}", "ParentId": "{parent}", "GraphId": "{root}#{shard}", "Path": "{path}", "Depth": "{depth}"},
	layouts.AdjacencyName: {"Id": "{id}", "ParentId": "{parent}"},
	layouts.ClosureName:   {"Id": "{id}", "RelativeDepth": "{relative_depth}", "AncestorId": "{ancestor}", "ParentId": "{parent}"},
	layouts.PrefixName:    {"Key": "{key}", "Child": "{child}"},
}

// basePlaceholders are the placeholders a base layout's items hold:
// closure's rows hold their own parts and none of the path's, and the path
// layouts' items none of closure's.
func basePlaceholders(layout string) []string {
	switch layout {
	case layouts.ClosureName:
		return []string{phID, phParent, phAncestor, phRelDepth}
	case layouts.PrefixName:
		return []string{phKey, phChild}
	case layouts.AdjacencyName:
		return []string{phID, phParent}
	}
	ps := []string{phID, phParent, phRoot, phPath, phInner, phSubpath, phParentSubpath, phDepth}
	if layout == layouts.ShardedName {
		ps = append(ps, phShard)
	}
	return ps
}

// DefaultRelativeDepthDigits is the width of {relative_depth} in a text
// template when the model does not give relative_depth_digits: depths up to
// 9999.
const DefaultRelativeDepthDigits = 4

// ModelError is a model file that cannot be used: the file, the field and
// what to do.
type ModelError struct {
	File  string
	Field string
	Err   error
}

func (e *ModelError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("model %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("model %s: %s: %v", e.File, e.Field, e.Err)
}

// Unwrap returns Err.
func (e *ModelError) Unwrap() error { return e.Err }

// IsModel reports whether l is a table model rather than a layout.
func IsModel(l layouts.Layout) bool { _, ok := l.(*modelLayout); return ok }

// FitHint is what to check when a table's items do not fit l: the flag
// that chose it, and what else shapes its items.
func FitHint(l layouts.Layout) string {
	if m, ok := l.(*modelLayout); ok {
		return fmt.Sprintf("is --model %s the model the table was written with?", m.file)
	}
	return fmt.Sprintf("is --layout %s right, with the --attr renames and --delimiter the table was written with?", l.Name())
}

// LoadModel reads and checks the model file at path. Every problem is a
// *ModelError naming the file and the field. A model that names
// parameters ({param:NAME}) needs LoadModelParams.
func LoadModel(path string) (layouts.Layout, error) { return LoadModelParams(path, nil) }

// LoadModelParams is LoadModel with the values of the model's parameters
// (--model-param NAME=VALUE), bound into its templates as literal text. A
// parameter the model names that params does not hold is a *ModelError
// (ErrParamNotSet); params the model does not name are left for the
// caller to check against every model it uses (Params).
func LoadModelParams(path string, params map[string]string) (layouts.Layout, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ModelError{File: path, Err: err}
	}
	return ParseModelParams(path, b, params)
}

// ParseModel is LoadModel of a file's bytes; file names it in errors.
func ParseModel(file string, data []byte) (layouts.Layout, error) {
	return ParseModelParams(file, data, nil)
}

// ErrParamNotSet marks a model that names a parameter the command was not
// given.
var ErrParamNotSet = errors.New("a parameter of the model is not set")

// Params returns the names of the parameters model l names, sorted; none
// for a layout.
func Params(l layouts.Layout) []string {
	m, ok := l.(*modelLayout)
	if !ok {
		return nil
	}
	return slices.Sorted(mapsKeys(m.params))
}

// ParseModelParams is LoadModelParams of a file's bytes.
func ParseModelParams(file string, data []byte, params map[string]string) (layouts.Layout, error) {
	p := &modelParser{file: file, params: params}
	mj, err := p.decode(data)
	if err != nil {
		return nil, err
	}
	p.mj = &mj
	for _, step := range []func() error{p.base, p.tableKeys, p.indexes, p.finish} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	h := sha256.New()
	h.Write(data)
	for _, name := range slices.Sorted(mapsKeys(params)) {
		fmt.Fprintf(h, "\x00%s=%s", name, params[name])
	}
	p.m.digest = hex.EncodeToString(h.Sum(nil))
	return p.m, nil
}

// Digest identifies model l's text and the values of its parameters, for
// the fingerprints of checkpoints and manifests: a run resumed with the
// model file changed (another template writes other items) is another
// run, though the model's name is the same. "" for a layout.
func Digest(l layouts.Layout) string {
	if m, ok := l.(*modelLayout); ok {
		return m.digest
	}
	return ""
}

// modelParser is ParseModel at work: the model's JSON, and the model
// built from it step by step, each step checking its part.
type modelParser struct {
	file   string
	params map[string]string
	mj     *modelJSON
	m      *modelLayout
}

// fail is a *ModelError naming the file and the field.
func (p *modelParser) fail(field, format string, args ...any) error {
	return &ModelError{File: p.file, Field: field, Err: fmt.Errorf(format, args...)}
}

// decode reads the model's one JSON object, refusing unknown fields.
func (p *modelParser) decode(data []byte) (modelJSON, error) {
	var mj modelJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&mj); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return mj, p.fail("", "line %d: %v", line, err)
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return mj, p.fail(strings.Trim(f, `"`), "unknown field: remove it, or check its spelling against docs/MODELS.md")
		}
		return mj, p.fail("", "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return mj, p.fail("", "text after the model's JSON object: a file holds one model")
	}
	return mj, nil
}

// base checks the model's name and builds its base layout, under private
// attribute names, with the options the base takes.
func (p *modelParser) base() error {
	fail, mj, file := p.fail, p.mj, p.file
	p.m = &modelLayout{name: mj.Name, file: file, byName: map[string]*modelAttr{}, baseAttrs: map[string]baseAttr{}, params: map[string]string{}}
	m := p.m
	if m.name == "" {
		m.name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if !modelName.MatchString(m.name) {
		return fail("name", "%q: a model's name is 1 to 200 letters, digits, '_', '-' or '.' (it goes into table names and messages)", m.name)
	}
	canon, ok := canonTemplates[mj.Layout]
	if !ok {
		return fail("layout", "%q cannot be a model's base layout: choose one of %s, %s, %s, %s or %s",
			mj.Layout, layouts.PathName, layouts.ShardedName, layouts.AdjacencyName, layouts.ClosureName, layouts.PrefixName)
	}
	m.baseName = mj.Layout
	m.closure = mj.Layout == layouts.ClosureName
	m.prefix = mj.Layout == layouts.PrefixName
	renames := map[string]string{}
	for c := range canon {
		renames[c] = modelPrivate + c
	}
	// The base checks path ids; the model itself writes no item for an
	// implicit inner node and reads it back (the adjacency base, which
	// reaches children through ByParent, cannot).
	opts := layouts.Options{Attr: renames, Delimiter: mj.Delimiter, Shards: mj.Shards, PathIDs: mj.PathIDs}
	m.pathIDs, m.implicitInner = mj.PathIDs, mj.ImplicitInner
	if mj.PathIDs || mj.ImplicitInner {
		if mj.Layout != layouts.AdjacencyName {
			return fail("path_ids", "a model's path ids and implicit inner nodes are read and written with the adjacency base (a table keyed by the node's path, or by its path and its parent's): give \"layout\": \"adjacency\"")
		}
		if !mj.PathIDs {
			return fail("implicit_inner", "an implicit inner node is named by its descendants' path ids: give \"path_ids\": true too")
		}
	}
	if m.closure {
		if mj.Delimiter != "" {
			return fail("delimiter", "the closure base has no delimiter (its keys hold one id each); remove it")
		}
		m.digits = DefaultRelativeDepthDigits
		if mj.RelativeDepthDigits != 0 {
			if mj.RelativeDepthDigits < 1 || mj.RelativeDepthDigits > 9 {
				return fail("relative_depth_digits", "%d: give 1 to 9, the digits {relative_depth} is written with in a text value", mj.RelativeDepthDigits)
			}
			m.digits = mj.RelativeDepthDigits
		}
		cc, err := parseClosureCopy(mj.ClosureCopy)
		if err != nil {
			return fail("closure_copy", "%v", err)
		}
		opts.ClosureCopy = cc
	} else {
		if mj.RelativeDepthDigits != 0 {
			return fail("relative_depth_digits", "only the closure base has {relative_depth}; remove it")
		}
		if len(mj.ClosureCopy) > 0 {
			return fail("closure_copy", "only the closure base has ancestor rows to copy attributes to; remove it")
		}
	}
	if mj.Layout == layouts.ShardedName && mj.Shards == 0 {
		return fail("shards", "the sharded-path base needs its shard count: give \"shards\": S (the table's GraphId ends in #1 … #S)")
	}
	if mj.Layout != layouts.ShardedName && mj.Shards != 0 {
		return fail("shards", "only the sharded-path base has shards; remove it")
	}
	base, err := layouts.New(mj.Layout, opts)
	if err != nil {
		return fail("layout", "%v", err)
	}
	// A model names its rows itself: link_to is an attribute there.
	base = layouts.WithoutLinks(base)
	m.base, m.delim = base, base.Delimiter()
	m.shards = mj.Shards
	m.baseTable = base.Table()
	for c, text := range canon {
		t, err := parseTemplate(text)
		if err != nil {
			return err
		}
		m.baseAttrs[modelPrivate+c] = baseAttr{canon: c, tmpl: t, num: c == "Depth" || c == "RelativeDepth"}
	}

	return nil
}

// attr is the attribute declared at field: its name, template and type,
// checked against the base's parts; an attribute declared twice the same
// way is the same attribute.
func (p *modelParser) attr(field string, a *attributeJSON) (*modelAttr, error) {
	fail, m := p.fail, p.m
	if a == nil {
		return nil, fail(field, "missing: give {\"name\": …, \"template\": …}")
	}
	switch {
	case a.Name == "" || len(a.Name) > layouts.MaxAttrNameBytes:
		return nil, fail(field+".name", "an attribute name is 1 to %d bytes", layouts.MaxAttrNameBytes)
	case strings.HasPrefix(a.Name, modelPrivate):
		return nil, fail(field+".name", "an attribute name may not start with a NUL character")
	}
	t, err := parseTemplate(a.Template)
	if err != nil {
		return nil, fail(field+".template", "%v", err)
	}
	if t, err = p.bind(field, t); err != nil {
		return nil, err
	}
	ma := &modelAttr{name: a.Name, tmpl: t, absentOnRoot: a.AbsentOnRoot, where: field}
	switch a.Type {
	case "", "S":
	case "N":
		if !t.bare() || (!t.has(phDepth) && !t.has(phShard) && !t.has(phRelDepth)) {
			return nil, fail(field+".type", "N fits a template that is {depth}, {shard} or {relative_depth} alone; %q is text, so make it S", a.Template)
		}
		ma.num = true
	default:
		return nil, fail(field+".type", "%q: want S or N", a.Type)
	}
	own := basePlaceholders(m.baseName)
	if m.pathIDs {
		// A path id names the node's root, path, depth and name: the
		// adjacency base reads them all back from it.
		own = append(basePlaceholders(layouts.PathName), phName)
	}
	if t.has(phName) && !m.pathIDs {
		return nil, fail(field+".template", "{name} is the last segment of a path id: give \"path_ids\": true (or use {id})")
	}
	for _, ph := range t.uses() {
		switch {
		case ph == phShard && m.shards == 0:
			return nil, fail(field+".template", "{shard} needs the sharded-path base layout")
		case (ph == phAncestor || ph == phRelDepth) && !m.closure:
			return nil, fail(field+".template", "{%s} is a part of the closure base's rows; the %s base's items do not have it: use {%s}", ph, m.baseName, strings.Join(own, "}, {"))
		case (ph == phKey || ph == phChild) && !m.prefix:
			return nil, fail(field+".template", "{%s} is a part of the prefix base's rows; the %s base's items do not have it: use {%s}", ph, m.baseName, strings.Join(own, "}, {"))
		case !slices.Contains(own, ph) && m.prefix:
			return nil, fail(field+".template", "{%s} is not a part of the prefix base's rows, which are read by their Key and Child alone: use {%s}", ph, strings.Join(own, "}, {"))
		case !slices.Contains(own, ph) && m.baseName == layouts.AdjacencyName:
			// Its items are read one by one, by id and parent: nothing
			// could read a path back, and a move would leave the one
			// its subtree's items hold behind.
			return nil, fail(field+".template", "{%s} is not a part of the adjacency base's items, which hold a node's id and parent alone: a table that keeps a node's root, path or depth is a path table (\"layout\": \"path\", with its \"delimiter\"); or use {%s}", ph, strings.Join(own, "}, {"))
		case !slices.Contains(own, ph):
			return nil, fail(field+".template", "{%s} is not a part of the %s base's items (a row holds its node, its parent, one ancestor and how far up that is): use {%s}", ph, m.baseName, strings.Join(own, "}, {"))
		}
	}
	if m.prefix && (len(t.uses()) > 1 || len(t.uses()) == 1 && t.parts[len(t.parts)-1].ph == "") {
		// A Key holds the delimiter and ids, a Child an id or the
		// delimiter: text after either could be in it.
		return nil, fail(field+".template", "%q: a template of the prefix base is {key} or {child} alone, at its end, after any text (\"DIR#{key}\")", a.Template)
	}
	if t.has(phRelDepth) && !ma.num {
		t.width = m.digits
		ma.tmpl = t
	}
	if prev, ok := m.byName[a.Name]; ok {
		if prev.tmpl.text != ma.tmpl.text || prev.num != ma.num || prev.absentOnRoot != ma.absentOnRoot {
			return nil, fail(field, "attribute %q is declared again with another template or type than at %s (%q): one attribute has one value; give it the same declaration or another name",
				a.Name, prev.where, prev.tmpl.text)
		}
		return prev, nil
	}
	m.byName[a.Name] = ma
	m.attrs = append(m.attrs, ma)
	return ma, nil
}

// bind checks the values of the parameters template t names, at field, and
// binds them: each is set, not empty, and holds none of the text that
// follows it in the template, which ends it when an item is read back
// (so that no value of one tenant reads as another's).
func (p *modelParser) bind(field string, t template) (template, error) {
	for _, name := range t.params {
		v, ok := p.params[name]
		switch {
		case !ok:
			return t, &ModelError{File: p.file, Field: field + ".template", Err: fmt.Errorf("template %q names {param:%s}, which is not set: give --model-param %s=VALUE (%w)",
				t.text, name, name, ErrParamNotSet)}
		case v == "":
			return t, p.fail(field+".template", "parameter %s is empty: give it a value (--model-param %s=VALUE); a key built from it alone would be empty", name, name)
		}
		for _, sep := range t.paramSeps(name) {
			if sep != "" && strings.Contains(v, sep) {
				return t, p.fail(field+".template", "parameter %s=%q holds %q, the text that ends it in template %q, so an item could not be told to be this value's or another's: give a value without it",
					name, v, sep, t.text)
			}
		}
		p.m.params[name] = v
	}
	b, missing := t.bind(p.params)
	if missing != "" {
		return t, p.fail(field+".template", "parameter %s is not set", missing)
	}
	return b, nil
}

// tableKeys checks the table's keys: what each base needs of them, and
// that a node's key is built from its id.
func (p *modelParser) tableKeys() error {
	fail, m, mj := p.fail, p.m, p.mj
	var err error
	if m.pk, err = p.attr("table.partition_key", mj.Table.PartitionKey); err != nil {
		return err
	}
	if mj.Table.SortKey != nil {
		if m.sk, err = p.attr("table.sort_key", mj.Table.SortKey); err != nil {
			return err
		}
	}
	if m.closure {
		// The table holds a node's rows under its id, one a relative
		// depth: ancestors are Id = X AND RelativeDepth in a band.
		if m.sk == nil {
			return fail("table.sort_key", "the closure base keeps a node's rows under its id, one a relative depth: give a sort key built from {relative_depth}, such as \"ANC#{relative_depth}\"")
		}
		if err := m.depthKey(m.sk); err != nil {
			return fail(m.sk.where+".template", "%v", err)
		}
	}
	if m.prefix {
		// A row is keyed by its Key and its Child: the listing of a
		// node's children is one partition.
		switch {
		case !m.pk.tmpl.has(phKey):
			return fail("table.partition_key.template", "the prefix base keys a row by its Key: build the partition key from {key}, such as \"DIR#{key}\"")
		case m.sk == nil || !m.sk.tmpl.has(phChild):
			return fail("table.sort_key", "the prefix base sorts a listing by its Child: give a sort key built from {child}, such as \"C#{child}\"")
		case m.pk.absentOnRoot || m.sk.absentOnRoot:
			return fail("table", "a table key is on every row, a root's too: it cannot be absent on roots")
		}
	}
	for _, k := range []*modelAttr{m.pk, m.sk} {
		if k == nil || (m.closure && k == m.sk) || m.prefix {
			continue
		}
		if k.absentOnRoot || k.tmpl.has(phParent) {
			return fail(k.where, "a table key is on every item, roots too: it cannot be absent on roots or use {parent}")
		}
		for _, ph := range k.tmpl.uses() {
			if ph != phID && (ph != phName || !m.pathIDs) {
				return fail(k.where+".template", "the table key is built from {id} alone (with text around it); {%s} would change the key of a node that moves", ph)
			}
		}
	}
	if m.pathIDs && m.pk.tmpl.constant() {
		// The sort key is the whole path (a bucket and its objects'
		// keys): checked there.
		if err := p.fullPathKeys(); err != nil {
			return err
		}
	}
	if m.pathIDs && (m.pk.tmpl.has(phName) || m.sk != nil && m.sk.tmpl.has(phName)) {
		// Keyed by its name: a leaf's item alone (model_located.go).
		if err := p.locatedKeys(); err != nil {
			return err
		}
	} else if !m.prefix && !m.pk.tmpl.has(phID) && (m.sk == nil || !m.sk.tmpl.has(phID)) {
		return fail("table", "no table key uses {id}, so two nodes would get the same key: put {id} in the partition key's template (or, for a partition key constant per tenant such as \"$hr#orgid_{param:org}\", in the sort key's)")
	}
	for _, k := range []*modelAttr{m.pk, m.sk} {
		if k != nil && (k.tmpl.constant() || len(k.tmpl.params) > 0) {
			m.tenantKeys = append(m.tenantKeys, k)
		}
	}

	return nil
}

// indexes checks each index against the base index it serves: its keys
// are built from the parts the base's queries name; and that every index
// the base queries is declared.
func (p *modelParser) indexes() error {
	fail, m, mj := p.fail, p.m, p.mj
	baseIndex := map[string]layouts.IndexSpec{}
	for _, x := range m.baseTable.Indexes {
		baseIndex[x.Name] = x
	}
	for i := range mj.Indexes {
		x, err := p.index(fmt.Sprintf("indexes[%d]", i), &mj.Indexes[i], baseIndex)
		if err != nil {
			return err
		}
		m.indexes = append(m.indexes, x)
	}
	if m.fullPath && len(m.indexes) > 0 {
		return fail("indexes", "a model whose sort key is the whole path reads its table alone (a node's children are a Query of its path and the delimiter, grouped at the next delimiter): remove the index")
	}
	for _, need := range map[string][]string{layouts.PathName: {"ByPath"}, layouts.ShardedName: {"ByPath"}, layouts.AdjacencyName: {"ByParent"}, layouts.ClosureName: {"ByAncestor"}}[m.baseName] {
		if m.index(need) == nil && !m.fullPath {
			return fail("indexes", "the %s base layout answers its queries with %s: declare an index with \"serves\": %q", m.baseName, need, need)
		}
	}
	return nil
}

// index checks the index declared at field against the base index it
// serves, one of baseIndex, and the indexes declared before it.
func (p *modelParser) index(field string, xj *indexJSON, baseIndex map[string]layouts.IndexSpec) (*modelIndex, error) {
	fail, m, mj := p.fail, p.m, p.mj
	var err error
	x := &modelIndex{name: xj.Name, serves: xj.Serves, sparse: xj.Sparse}
	if !layouts.IsTableName(x.name) {
		return nil, fail(field+".name", "%q: an index name is 3 to 255 letters, digits, '_', '-' or '.'", x.name)
	}
	bx, ok := baseIndex[x.serves]
	if !ok && len(baseIndex) == 0 {
		return nil, fail(field+".serves", "%q: the %s layout has no index (it reads its table alone): remove the index", x.serves, mj.Layout)
	}
	if !ok {
		names := slices.Sorted(mapsKeys(baseIndex))
		return nil, fail(field+".serves", "%q is not an index of the %s layout: give one of %s", x.serves, mj.Layout, strings.Join(names, ", "))
	}
	for _, o := range m.indexes {
		if o.name == x.name {
			return nil, fail(field+".name", "index %q is declared twice", x.name)
		}
		if o.serves == x.serves {
			return nil, fail(field+".serves", "indexes %q and %q both serve %s: one index serves each", o.name, x.name, x.serves)
		}
	}
	if x.pk, err = p.attr(field+".partition_key", xj.PartitionKey); err != nil {
		return nil, err
	}
	if xj.SortKey != nil {
		if x.sk, err = p.attr(field+".sort_key", xj.SortKey); err != nil {
			return nil, err
		}
	}
	if m.located {
		return x, p.locatedIndex(field, x)
	}
	// The partition key is what the base's queries name: it must be
	// built from exactly the parts of the base's.
	want := m.baseAttrs[bx.PK.Name].tmpl.uses()
	if got := x.pk.tmpl.uses(); !sameSet(got, want) {
		return nil, fail(field+".partition_key.template", "%s is queried by {%s}; the template uses {%s}: build it from {%s}, with any text around",
			x.serves, strings.Join(want, "}, {"), strings.Join(got, "}, {"), strings.Join(want, "}, {"))
	}
	if bx.SK != nil && m.baseAttrs[bx.SK.Name].canon == "RelativeDepth" {
		if x.sk == nil {
			return nil, fail(field+".sort_key", "%s is queried by {ancestor} and a band of {relative_depth}: give a sort key built from {relative_depth}, such as \"ANC#{relative_depth}\"", x.serves)
		}
		if err := m.depthKey(x.sk); err != nil {
			return nil, fail(x.sk.where+".template", "%v", err)
		}
		if x.pk.absentOnRoot || x.sk.absentOnRoot {
			return nil, fail(field, "%s holds every row, a root's own too: its keys cannot be absent on roots", x.serves)
		}
	}
	if bx.SK != nil && m.baseAttrs[bx.SK.Name].canon == "Path" {
		if x.sk == nil || !x.sk.tmpl.endsWithPath() || slices.ContainsFunc(x.sk.tmpl.uses()[:len(x.sk.tmpl.uses())-1], func(p string) bool { return p != phRoot }) {
			return nil, fail(field+".sort_key.template", "%s's sort key is read with begins_with on the path: its template must end with {path} or {inner}, after text and at most {root}", x.serves)
		}
	}
	switch p := xj.Projection; {
	case p == nil || p.Type == "ALL":
		x.projection = types.ProjectionTypeAll
	case p.Type == "KEYS_ONLY":
		x.projection = types.ProjectionTypeKeysOnly
	case p.Type == "INCLUDE":
		if len(p.NonKeyAttributes) == 0 {
			return nil, fail(field+".projection.non_key_attributes", "INCLUDE needs the attributes it projects")
		}
		x.projection, x.include = types.ProjectionTypeInclude, p.NonKeyAttributes
	default:
		return nil, fail(field+".projection.type", "%q: want ALL, KEYS_ONLY or INCLUDE", p.Type)
	}
	if p := xj.Projection; p != nil && p.Type != "INCLUDE" && len(p.NonKeyAttributes) > 0 {
		return nil, fail(field+".projection.non_key_attributes", "only INCLUDE takes a list of attributes")
	}
	return x, nil
}

// finish adds the other attributes and the type field, gathers the
// templates' separators, and tests the model on a few nodes.
func (p *modelParser) finish() error {
	fail, m, mj := p.fail, p.m, p.mj
	for i := range mj.Attributes {
		if _, err := p.attr(fmt.Sprintf("attributes[%d]", i), &mj.Attributes[i]); err != nil {
			return err
		}
	}
	if tf := mj.TypeField; tf != nil {
		switch {
		case tf.Name == "" || tf.Value == "":
			return fail("type_field", "give its name and value, such as {\"name\": \"_type\", \"value\": \"Node\"}")
		case m.byName[tf.Name] != nil:
			return fail("type_field.name", "%q is an attribute of the model (%s); the type field is an attribute of its own", tf.Name, m.byName[tf.Name].where)
		}
		m.typeName, m.typeValue = tf.Name, tf.Value
	}
	for _, a := range m.attrs {
		m.seps = append(m.seps, a.tmpl.separators()...)
		if a.tmpl.width > 0 && m.tooDeep == nil {
			m.tooDeep = fmt.Errorf("%w: the node is deeper than %d, so its rows' {relative_depth} would need more than the %d digits that model %s writes it with in text (%s), and would sort wrongly; raise relative_depth_digits in the model (if the table's values allow it)",
				transform.ErrKeyTooLong, maxPadded(m.digits), m.digits, m.name, a.name)
		}
	}
	inKey := map[string]bool{}
	for _, k := range []*modelAttr{m.pk, m.sk} {
		if k != nil {
			for _, name := range k.tmpl.params {
				inKey[name] = true
			}
		}
	}
	for _, a := range m.attrs {
		for _, name := range a.tmpl.params {
			if !inKey[name] {
				return fail(a.where+".template", "{param:%s} is not in the table's key: two values of it would write their nodes under the same keys, each over the other's; put it in the table's partition key (\"T#{param:%s}\")", name, name)
			}
		}
	}
	m.setKeys()
	if err := p.emptyKeysAtLoad(); err != nil {
		return err
	}
	slices.Sort(m.seps)
	m.seps = slices.Compact(m.seps)
	if m.delim != "" {
		m.seps = slices.DeleteFunc(m.seps, func(s string) bool { return s == "" })
	}
	if err := m.selfTest(); err != nil {
		return fail("", "%v", err)
	}
	return nil
}

// setKeys lists the model's keys and marks each key attribute, and those
// of sparse indexes alone, which an empty value leaves off the item.
func (m *modelLayout) setKeys() {
	add := func(a *modelAttr, role, where string, sparse bool) {
		if a != nil {
			m.keys = append(m.keys, modelKey{a: a, role: role, where: where, sparse: sparse})
		}
	}
	add(m.pk, "partition", "the table", false)
	add(m.sk, "sort", "the table", false)
	for _, x := range m.indexes {
		add(x.pk, "partition", "index "+x.name, x.sparse)
		add(x.sk, "sort", "index "+x.name, x.sparse)
	}
	for _, k := range m.keys {
		k.a.omitEmpty = true
	}
	for _, k := range m.keys {
		k.a.omitEmpty = k.a.omitEmpty && k.sparse
	}
	m.spec = m.table()
}

// emptyKeysAtLoad refuses a model one of whose keys, of the table or of
// an index that is not sparse, renders empty for some node: a template of
// placeholders that can be empty alone ({inner}, {parent_subpath}: for a
// root and a child of a root; {subpath}: for a root), unless the
// attribute is absent on the only nodes it would be empty for (roots).
// Every forest with more than its roots has such nodes, so the model is
// refused when it is loaded rather than node by node.
func (p *modelParser) emptyKeysAtLoad() error {
	m := p.m
	if m.located {
		// Only its leaves have items, and a leaf's index sort key is
		// empty only at depth 0 or 1: refused node by node (emptyKeys),
		// as the model's design has its leaves deeper.
		return nil
	}
	for _, k := range m.keys {
		a := k.a
		if a.omitEmpty || k.sparse || !a.tmpl.mayBeEmpty() {
			continue // a sparse index leaves it off; another key is checked
		}
		offRoots := a.absentOnRoot || a.tmpl.has(phParent)
		upTo := a.tmpl.emptyFor()
		if offRoots && upTo == 0 {
			continue // empty on roots alone, which do not have it
		}
		who := "a root"
		if upTo > 0 {
			who = "a root and a child of a root"
			if offRoots {
				who = "a child of a root"
			}
		}
		fix := fmt.Sprintf("give the template literal text around its placeholder (\"/%s\")", a.tmpl.text)
		if k.where != "the table" {
			fix += fmt.Sprintf(", or mark the index \"sparse\": true to leave such nodes out of %s", strings.TrimPrefix(k.where, "index "))
			if upTo == 0 {
				fix += ", or make the attribute \"absent_on_root\": true"
			}
		}
		return p.fail(a.where+".template", "%w: the %s key %s of %s would be empty for %s (template %q); DynamoDB refuses an empty key: %s",
			transform.ErrEmptyKey, k.role, a.name, k.where, who, a.tmpl.text, fix)
	}
	return nil
}

// emptyKeys returns the problems of the node's keys that would be empty
// (ErrEmptyKey), naming each attribute and where it is a key, and what to
// do: a template can render empty only from placeholders that can be
// empty, {inner} (for a root and a child of a root); the closure and
// prefix bases' parts never are. A key of sparse indexes alone is left
// off instead.
func (m *modelLayout) emptyKeys(s *transform.Stats) []error {
	if m.closure || m.prefix {
		return nil
	}
	var errs []error
	for _, k := range m.keys {
		if k.a.omitEmpty || !k.a.tmpl.mayBeEmpty() {
			continue
		}
		if n, ok := m.renderedLen(k.a, s); !ok || n > 0 {
			continue
		}
		hint := fmt.Sprintf("give the template literal text around its placeholder (\"/%s\") in model %s", k.a.tmpl.text, m.name)
		if k.where != "the table" {
			hint += fmt.Sprintf(", or mark the index \"sparse\": true to leave such nodes out of %s", strings.TrimPrefix(k.where, "index "))
		}
		errs = append(errs, fmt.Errorf("%w: the %s key %s of %s would be empty for this node (template %q: a root or a child of a root has no ids between it and its root); DynamoDB refuses an empty key: %s",
			transform.ErrEmptyKey, k.role, k.a.name, k.where, k.a.tmpl.text, hint))
	}
	return errs
}

// depthKey checks a closure model's sort key that stands for the base's
// RelativeDepth, which its queries read by a band (= r, >= r, BETWEEN):
// {relative_depth} alone, as a number, or after literal text, as
// zero-padded text whose order is the numbers'. Text after it, or another
// part before it, would break that order.
func (m *modelLayout) depthKey(a *modelAttr) error {
	t := a.tmpl
	n := len(t.parts)
	if a.absentOnRoot {
		return fmt.Errorf("a key holding {relative_depth} is on every row, a root's too: it cannot be absent on roots")
	}
	if !slices.Equal(t.uses(), []string{phRelDepth}) || t.parts[n-1].ph != phRelDepth {
		return fmt.Errorf("%q: the closure base reads this key by a band of relative depths (= 1, >= 1, BETWEEN 1 AND 2): build it from {relative_depth} alone, at its end, after any text (\"ANC#{relative_depth}\", written with %d digits, or {relative_depth} with type N), so that its order is the depths'", t.text, m.digits)
	}
	return nil
}

// maxPadded is the largest number width digits hold.
func maxPadded(width int) int {
	n := 1
	for range width {
		n *= 10
	}
	return n - 1
}

// parseClosureCopy reads a closure model's closure_copy: "all" (the
// default) or "none", or a list of attribute names, as --closure-copy.
func parseClosureCopy(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var word string
	if json.Unmarshal(raw, &word) == nil {
		switch word {
		case "all":
			return nil, nil
		case "none":
			return []string{}, nil
		}
		return nil, fmt.Errorf("%q: want \"all\", \"none\" or a list of attribute names", word)
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil || len(names) == 0 {
		return nil, fmt.Errorf("want \"all\", \"none\" or a list of attribute names")
	}
	return names, nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// selfTest writes a root, a child and a grandchild through the model and
// reads them back: a model whose attributes do not hold what the base
// layout needs to rebuild a node fails here, saying what is missing.
func (m *modelLayout) selfTest() error {
	paths := [][]string{{"r"}, {"r", "c"}, {"r", "c", "g"}}
	if m.pathIDs {
		d := m.delim
		paths = [][]string{{"r"}, {"r", "r" + d + "c"}, {"r", "r" + d + "c", "r" + d + "c" + d + "g"}}
	}
	for _, p := range paths {
		parent := ""
		if len(p) > 1 {
			parent = p[len(p)-2]
		}
		n := &transform.Node{Record: transform.Record{ID: p[len(p)-1], Parent: parent, Attrs: transform.Attrs{"x": layouts.StringValue("1")}}, Depth: len(p) - 1, Path: p}
		var items []layouts.Item
		if err := m.Items(n, func(it layouts.Item) { items = append(items, it) }); errors.Is(err, transform.ErrEmptyKey) {
			// A key empty at this depth (a bare {inner}): validation
			// refuses such nodes, each with where it is; a forest
			// without them is fine.
			continue
		} else if err != nil {
			return err
		}
		if m.closure || m.prefix {
			if err := m.selfTestRows(n, items); err != nil {
				return err
			}
			continue
		}
		want := m.valsOfNode(n)
		for _, it := range items {
			v, err := m.parse(layouts.MapView(it), true)
			if err != nil {
				return err
			}
			for name, ba := range m.baseAttrs {
				w, wok := ba.tmpl.render(&want, m.delim)
				g, gok := ba.tmpl.render(&v, m.delim)
				if wok != gok || w != g {
					ph := ba.tmpl.uses()
					return fmt.Errorf("the items do not hold the node's {%s} (the %s layout's %s), so a table of this model could not be read back: add an attribute whose template uses it",
						strings.Join(ph, "}, {"), m.baseName, strings.TrimPrefix(name, modelPrivate))
				}
			}
		}
	}
	return nil
}

// selfTestRows is selfTest of a closure model's rows: each reads back into
// the closure row it was built from.
func (m *modelLayout) selfTestRows(n *transform.Node, items []layouts.Item) error {
	var rows []layouts.Item
	if err := m.base.Items(n, func(b layouts.Item) { rows = append(rows, b) }); err != nil {
		return err
	}
	for i, it := range items {
		b, err := m.toBase(it)
		if err != nil {
			return err.(*layouts.ItemError).Err
		}
		for name, ba := range m.baseAttrs {
			if valueText(b[name]) != valueText(rows[i][name]) || (b[name] == nil) != (rows[i][name] == nil) {
				return fmt.Errorf("the rows do not hold the node's {%s} (the closure layout's %s), so a table of this model could not be read back: add an attribute whose template uses it",
					strings.Join(ba.tmpl.uses(), "}, {"), ba.canon)
			}
		}
	}
	return nil
}

func (m *modelLayout) valsOfNode(n *transform.Node) nodeVals {
	if m.pathIDs {
		// Its path is its names: {path} is the id, {root} its first name.
		names := strings.Split(n.ID, m.delim)
		v := valsOf(n.ID, n.Parent, names, m.shards)
		v.name = names[len(names)-1]
		v.set(phName)
		return v
	}
	return valsOf(n.ID, n.Parent, n.Path, m.shards)
}

// index returns the model's index serving the base index called serves;
// nil when there is none.
func (m *modelLayout) index(serves string) *modelIndex {
	for _, x := range m.indexes {
		if x.serves == serves {
			return x
		}
	}
	return nil
}

// modelName is what a model's name may be: it goes into bench's table
// names.
var modelName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,200}$`)

// Name is "model-" and the model's name.
func (m *modelLayout) Name() string { return "model-" + m.name }

// Table returns the model's keys and indexes.
func (m *modelLayout) Table() layouts.TableSpec { return m.table() }

// table builds Table's answer.
func (m *modelLayout) table() layouts.TableSpec {
	key := func(a *modelAttr) layouts.KeyAttr {
		t := types.ScalarAttributeTypeS
		if a.num {
			t = types.ScalarAttributeTypeN
		}
		return layouts.KeyAttr{Name: a.name, Type: t}
	}
	spec := layouts.TableSpec{PK: key(m.pk)}
	if m.sk != nil {
		k := key(m.sk)
		spec.SK = &k
	}
	for _, x := range m.indexes {
		is := layouts.IndexSpec{Name: x.name, PK: key(x.pk), Projection: x.projection, NonKeyAttributes: slices.Clone(x.include), Sparse: x.sparse}
		if x.sk != nil {
			k := key(x.sk)
			is.SK = &k
		}
		spec.Indexes = append(spec.Indexes, is)
	}
	return spec
}

// Delimiter is the base layout's.
func (m *modelLayout) Delimiter() string { return m.delim }

// Reserved returns the model's attribute names and its type field.
func (m *modelLayout) Reserved() []string {
	var names []string
	for _, a := range m.attrs {
		names = append(names, a.name)
	}
	if m.typeName != "" {
		names = append(names, m.typeName)
	}
	return names
}

// checkIDs refuses an id holding text that follows a placeholder in one
// of the model's templates: the value could not be read back.
func (m *modelLayout) checkIDs(ids []string) error {
	for _, id := range ids {
		for _, s := range m.seps {
			if s != "" && strings.Contains(id, s) {
				return fmt.Errorf("%w: id %q contains %q, which separates the parts of a template of model %s, so its values could not be read back; remove it from the id",
					transform.ErrDelimiter, id, s, m.name)
			}
		}
	}
	return nil
}

// Items emits the node's one item: its attributes, the model's attributes
// (those with {parent} or absent_on_root not on a root), and the type field.
func (m *modelLayout) Items(n *transform.Node, emit func(layouts.Item)) error {
	if err := layouts.CheckShape(m.base, n); err != nil {
		return err
	}
	if err := m.checkIDs(n.Path); err != nil {
		return err
	}
	if err := m.checkPathID(n.ID, n.Parent); err != nil {
		return err
	}
	if m.located && n.Inner && len(n.Attrs) > 0 {
		return m.innerAttrsError(n.ID)
	}
	if m.omits(n) {
		// An implicit inner node: its descendants' keys name it.
		for name := range n.Attrs {
			if err := m.attrNameError(name); err != nil {
				return fmt.Errorf("layouts: node %q: %w", n.ID, err)
			}
		}
		return nil
	}
	for name := range n.Attrs {
		if err := m.attrNameError(name); err != nil {
			return fmt.Errorf("layouts: node %q: %w", n.ID, err)
		}
	}
	if m.closure || m.prefix {
		// Their parts are never empty; CheckKeys guards all the same.
		var kerr error
		err := m.rowItems(n, func(it layouts.Item) {
			if kerr == nil {
				if kerr = layouts.CheckKeys(m.spec, it); kerr == nil {
					emit(it)
				}
			}
		})
		if err == nil && kerr != nil {
			err = fmt.Errorf("node %q: %w", n.ID, kerr)
		}
		return err
	}
	v := m.valsOfNode(n)
	item := make(layouts.Item, len(n.Attrs)+len(m.attrs)+1)
	for k, a := range n.Attrs {
		item[k] = a
	}
	for _, a := range m.attrs {
		if a.absentOnRoot && n.Depth == 0 {
			continue
		}
		s, ok := a.tmpl.render(&v, m.delim)
		if !ok || (s == "" && a.omitEmpty) {
			continue
		}
		if a.num {
			item[a.name] = &types.AttributeValueMemberN{Value: s}
		} else {
			item[a.name] = layouts.StringValue(s)
		}
	}
	if m.typeName != "" {
		item[m.typeName] = layouts.StringValue(m.typeValue)
	}
	if err := layouts.CheckKeys(m.spec, item); err != nil {
		return fmt.Errorf("node %q: %w", n.ID, err)
	}
	emit(item)
	return nil
}

// rowItems is Items of the closure and prefix bases, which write several
// rows a node, each through the model's templates.
func (m *modelLayout) rowItems(n *transform.Node, emit func(layouts.Item)) error {
	if m.prefix {
		// One item a row of the prefix layout's: the object row, then
		// the listing row.
		root := n.Depth == 0
		return m.base.Items(n, func(b layouts.Item) { emit(m.prefixRow(b, root)) })
	}
	if err := m.checkDepth(n.Depth); err != nil {
		return fmt.Errorf("layouts: node %q: %w", n.ID, err)
	}
	// One item a row of the closure layout's, which come from the
	// node's own up to its root: row r names the ancestor r levels up.
	v := nodeVals{id: n.ID, parent: n.Parent}
	for _, ph := range []string{phID, phAncestor, phRelDepth} {
		v.set(ph)
	}
	if n.Parent != "" {
		v.set(phParent)
	}
	// The attributes of the node's parts alone are the same on every
	// row: built once, and shared, as the node's own values are.
	same := make(layouts.Item, len(m.attrs)+1)
	m.putAttrs(same, &v, n.Depth == 0, false)
	for r := 0; r <= n.Depth; r++ {
		v.relDepth, v.ancestor = r, n.Path[n.Depth-r]
		item := layouts.ClosureRow(m.base, n, r, len(m.attrs)+1)
		for k, a := range same {
			item[k] = a
		}
		m.putAttrs(item, &v, n.Depth == 0, true)
		emit(item)
	}
	return nil
}

// attrNameError is CheckAttrName for a model.
func (m *modelLayout) attrNameError(name string) error {
	if a, ok := m.byName[name]; ok {
		return fmt.Errorf("%w: attribute %q is an attribute of model %s (%s); rename the attribute in the input, or the model's",
			transform.ErrReservedAttr, name, m.name, a.where)
	}
	if name == m.typeName && name != "" {
		return fmt.Errorf("%w: attribute %q is the type field of model %s; rename the attribute in the input",
			transform.ErrReservedAttr, name, m.name)
	}
	return nil
}

// AppendItems is Items for a FlatNode: the same item, as attributes.
func (m *modelLayout) AppendItems(n *layouts.FlatNode, _ *layouts.ItemBuffer, emit func([]layouts.Attr)) error {
	path := n.Path
	if path == nil && m.pathIDs {
		return layouts.ErrPathNeeded // path ids hold the delimiter: PathText cannot be split
	}
	if path == nil {
		path = strings.Split(n.PathText, n.PathDelim)
	}
	node := &transform.Node{Record: transform.Record{ID: n.ID, Parent: n.Parent, Attrs: make(transform.Attrs, len(n.Attrs))}, Depth: n.Depth, Path: path, Inner: n.Inner}
	for _, a := range n.Attrs {
		node.Attrs[a.Name] = a.Value
	}
	return m.Items(node, func(item layouts.Item) {
		attrs := make([]layouts.Attr, 0, len(item))
		for k, v := range item {
			attrs = append(attrs, layouts.Attr{Name: k, Value: v})
		}
		emit(attrs)
	})
}

// foreign reports whether an item is one of the table's other items: a
// model with a type field owns only the items carrying it, with its value.
func (m *modelLayout) foreign(item layouts.View) bool {
	if m.outsidePartition(item) || m.unlocated(item) {
		return true
	}
	for _, k := range m.tenantKeys {
		// Another tenant's item (another value of a parameter), or
		// one outside the model's constant partition.
		if av := item.Get(k.name); av != nil && !k.tmpl.tenantOf(valueText(av)) {
			return true
		}
	}
	if m.typeName == "" {
		return false
	}
	s, ok := item.Str(m.typeName)
	return !ok || s != m.typeValue
}

// Foreign reports whether an item of a table of l is none of the layout's:
// one of the table's other items, which a table model's type field tells
// apart. Such an item is never read as a node, exported, changed or
// deleted. It is false for every item of a layout's table.
func Foreign(l layouts.Layout, item layouts.View) bool {
	m, ok := l.(*modelLayout)
	return ok && m.foreign(item)
}

// Partition returns the one partition of the table that holds every item
// of model l (its partition key and value) when the model's partition key
// is constant (per tenant: "$hr#orgid_{param:org}"), and nil otherwise:
// reading the nodes of such a table is a Query of that partition, not a
// Scan of every tenant's items.
func Partition(l layouts.Layout) layouts.Item {
	m, ok := l.(*modelLayout)
	if !ok || !m.pk.tmpl.constant() || m.pk.num {
		return nil
	}
	return layouts.Item{m.pk.name: layouts.StringValue(m.pk.tmpl.pre)}
}

// HasTypeField reports whether l is a table model with a type field: only
// then can an item that does not read as a node be told to be another
// entity's rather than a broken node.
func HasTypeField(l layouts.Layout) bool {
	m, ok := l.(*modelLayout)
	return ok && m.typeName != ""
}

// CheckItem returns the error of an item that carries a table model's type
// field but does not read back through its templates (wrapping ErrItem),
// and nil for every other item: a node item, another entity's, or any item
// of a layout's table (whose problems Node reports).
func CheckItem(l layouts.Layout, item layouts.Item) error {
	m, ok := l.(*modelLayout)
	if !ok || m.typeName == "" || m.foreign(layouts.MapView(item)) {
		return nil
	}
	_, _, err := m.Node(item)
	return err
}

// parse reads the model's attributes of an item back into the node's
// placeholders. keysOnly reads what it can (a key without its item).
func (m *modelLayout) parse(item layouts.View, full bool) (nodeVals, error) {
	var v nodeVals
	missingOnRoot, rootAttrs, parentMissing, sparseEmpty := 0, 0, false, false
	for _, a := range m.attrs {
		av := item.Get(a.name)
		if a.absentOnRoot {
			rootAttrs++
		}
		if av == nil {
			if a.absentOnRoot {
				missingOnRoot++
			}
			if a.tmpl.has(phParent) {
				parentMissing = true
			}
			if a.omitEmpty && a.tmpl.mayBeEmpty() {
				// A sparse index's key, left off because it was empty.
				sparseEmpty = a.tmpl.match("", &v, m.delim) || sparseEmpty
			}
			continue
		}
		var s string
		switch x := av.(type) {
		case *types.AttributeValueMemberS:
			if a.num {
				return v, fmt.Errorf("%w: model %s: attribute %q is S, want N", layouts.ErrItem, m.name, a.name)
			}
			s = x.Value
		case *types.AttributeValueMemberN:
			if !a.num {
				return v, fmt.Errorf("%w: model %s: attribute %q is N, want S", layouts.ErrItem, m.name, a.name)
			}
			s = x.Value
		default:
			return v, fmt.Errorf("%w: model %s: attribute %q is %s, want %s", layouts.ErrItem, m.name, a.name, layouts.TypeName(av), map[bool]string{true: "N", false: "S"}[a.num])
		}
		if !a.tmpl.match(s, &v, m.delim) {
			return v, fmt.Errorf("%w: model %s: attribute %q is %q, which does not read as %q (or does not agree with the item's other attributes)",
				layouts.ErrItem, m.name, a.name, s, a.tmpl.text)
		}
	}
	root := full && ((rootAttrs > 0 && missingOnRoot == rootAttrs) || parentMissing)
	if sparseEmpty && !v.has[phPath] && v.has[phRoot] && v.has[phID] && v.root == v.id && len(v.innerIDs) == 0 {
		// An empty {inner} left off an item whose root is itself: a root
		// (ids are unique), not a child of a root.
		v.path = []string{v.id}
		v.set(phPath)
	}
	if m.pathIDs && !v.has[phID] && v.has[phName] && v.has[phRoot] && v.has[phParentSubpath] {
		// A node whose keys hold its root, the names between and its
		// name: its path id is them joined.
		names := append(append([]string{v.root}, v.innerIDs...), v.name)
		v.path = names
		v.set(phPath)
		v.id = strings.Join(names, m.delim)
		v.set(phID)
		v.parent = strings.Join(names[:len(names)-1], m.delim)
		v.set(phParent)
	}
	if m.pathIDs && v.has[phID] && !v.has[phPath] && !v.has[phName] {
		// The path id names the rest: its names, its parent's id.
		names := strings.Split(v.id, m.delim)
		v.path, v.name = names, names[len(names)-1]
		v.set(phPath)
		v.set(phName)
		if len(names) > 1 && !v.has[phParent] {
			v.parent = strings.Join(names[:len(names)-1], m.delim)
			v.set(phParent)
		}
	}
	v.derive(root, m.shards)
	if m.pathIDs && v.has[phID] && !v.has[phParent] {
		// A path id names its parent: the id without its last name.
		if parent := m.pathParent(v.id); parent != "" {
			v.parent = parent
			v.set(phParent)
		}
	}
	if m.pathIDs && v.has[phID] {
		if err := m.checkPathID(v.id, v.parent); err != nil {
			return v, fmt.Errorf("%w: %w", layouts.ErrItem, err) // err names the model
		}
	}
	if m.pathIDs && v.has[phPath] && v.has[phID] && strings.Join(v.path, m.delim) != v.id || !m.pathIDs && !v.consistent() {
		// (With path ids, the path is the id's names.)
		return v, fmt.Errorf("%w: model %s: the item's attributes name two places in the tree (its path, the ids above it and its id disagree)", layouts.ErrItem, m.name)
	}
	return v, nil
}

// toBase turns an item of the model into the base layout's item: the
// user's attributes, and the base's attributes rebuilt from the
// placeholders.
func (m *modelLayout) toBase(item layouts.Item) (layouts.Item, error) {
	v, err := m.parse(layouts.MapView(item), true)
	if err != nil {
		return nil, &layouts.ItemError{Item: item, Err: err}
	}
	out := make(layouts.Item, len(item)+len(m.baseAttrs))
	for k, a := range item {
		if m.byName[k] == nil && k != m.typeName {
			out[k] = a
		}
	}
	for name, ba := range m.baseAttrs {
		s, ok := ba.tmpl.render(&v, m.delim)
		if !ok {
			if ba.canon == "ParentId" {
				continue
			}
			return nil, &layouts.ItemError{Item: item, Err: fmt.Errorf("%w: model %s: the item does not hold the node's {%s} (is it an item of this model?)",
				layouts.ErrItem, m.name, strings.Join(ba.tmpl.uses(), "}, {"))}
		}
		if ba.num {
			out[name] = &types.AttributeValueMemberN{Value: s}
		} else {
			out[name] = layouts.StringValue(s)
		}
	}
	return out, nil
}

// Node rebuilds the record of an item: false for an item without the type
// field, an error for one that carries it but does not read back through
// the templates.
func (m *modelLayout) Node(item layouts.Item) (transform.Record, bool, error) {
	if m.foreign(layouts.MapView(item)) {
		return transform.Record{}, false, nil
	}
	b, err := m.toBase(item)
	if err != nil {
		return transform.Record{}, false, err.(*layouts.ItemError).Err
	}
	return m.base.Node(b)
}

// Measure adds the node's item, computed from the templates, and its
// copies in the indexes as they project it (projectedBytes); the largest
// collections are the base layout's, less the roots an index leaves out
// (collectionOf): exact but for sharded-path's share of a tree among
// several shards.
func (m *modelLayout) Measure(s *transform.Stats, ms *layouts.Measure) {
	if m.located && s.Depth == 0 {
		// The index partition of a root holds its tree's leaves: at most
		// its nodes (Stats does not count its leaves), an upper bound.
		ms.CollectionOf(1, int64(s.TreeSize), m.hotKey(m.indexes[0].pk.tmpl, map[string]string{phRoot: s.RootID}))
	}
	if m.implicitInner && s.Children > 0 && s.AttrBytes == 0 {
		ms.Nodes++ // an implicit inner node: no item
		return
	}
	if m.closure {
		m.measureClosure(s, ms)
		return
	}
	if m.prefix {
		m.measurePrefix(s, ms)
		return
	}
	bm := layouts.NewMeasure(m.base)
	m.base.Measure(s, bm)
	ms.Nodes++
	size := s.AttrBytes
	if m.typeName != "" {
		size += len(m.typeName) + len(m.typeValue)
	}
	lens := map[string]int{}
	for _, a := range m.attrs {
		n, ok := m.renderedLen(a, s)
		if !ok || (n == 0 && a.omitEmpty) {
			continue
		}
		lens[a.name] = n
		size += len(a.name) + n
	}
	var copies []int
	for i, x := range m.indexes {
		for j, bx := range m.baseTable.Indexes {
			if bx.Name == x.serves && j+1 < len(bm.Collections) && !m.located {
				ms.CollectionOf(i+1, m.collectionOf(x, bm.Collections[j+1]), m.hotKey(x.pk.tmpl, hotVals(x, s)))
			}
		}
		pk, ok := lens[x.pk.name]
		if !ok {
			continue
		}
		sk := 0
		if x.sk != nil {
			if sk, ok = lens[x.sk.name]; !ok {
				continue
			}
			ms.Key(2*i+3, sk)
		}
		copies = append(copies, m.projectedBytes(x, size, lens, s))
		ms.Key(2*i+2, pk)
	}
	ms.ProjectedItem(size, copies)
	ms.Key(0, lens[m.pk.name])
	if m.sk != nil {
		ms.Key(1, lens[m.sk.name])
	}
	m.tableCollection(ms, 1)
}

// tableCollection adds the node's n items to the table's collection: its
// own, or, under a partition key constant per tenant, the one every
// node's items share.
func (m *modelLayout) tableCollection(ms *layouts.Measure, n int64) {
	if m.pk.tmpl.constant() {
		ms.SharedCollectionOf(0, n, m.pk.tmpl.pre)
		return
	}
	ms.Collection(0, n)
}

// collectionOf is the largest collection of index x, given n, the base
// layout's of the index x serves. ByPath's is the node's whole tree; an
// index whose key is absent on roots (wadsworth's gsi1) holds the tree
// but its root. ByParent's, a node's children, holds no root anyway, and
// sharded-path's share of a tree among several shards is an estimate
// either way.
func (m *modelLayout) collectionOf(x *modelIndex, n int64) int64 {
	rootless := func(a *modelAttr) bool { return a != nil && (a.absentOnRoot || a.tmpl.has(phParent)) }
	if x.serves == "ByPath" && m.shards <= 1 && n > 0 && (rootless(x.pk) || rootless(x.sk)) {
		return n - 1
	}
	return n
}

// hotKey is template t (a partition key's) with vals in its placeholders:
// the value DynamoDB sees for a largest collection ("TREE#CM1", not the
// base layout's "CM1"). A template with {shard} names the first and the
// last shard's ("CM1#1…CM1#4").
func (m *modelLayout) hotKey(t template, vals map[string]string) string {
	one := func(shard string) string {
		text := t.text
		for ph, v := range vals {
			text = strings.ReplaceAll(text, "{"+ph+"}", v)
		}
		return strings.ReplaceAll(text, "{"+phShard+"}", shard)
	}
	if t.has(phShard) && m.shards > 1 {
		return one("1") + "…" + one(strconv.Itoa(m.shards))
	}
	return one("1")
}

// hotVals are the values of the placeholders of the partition key of
// index x for the node of s's largest collection there: a node's children
// for ByParent, its tree for ByPath.
func hotVals(x *modelIndex, s *transform.Stats) map[string]string {
	if x.serves == "ByParent" {
		return map[string]string{phParent: s.ID}
	}
	return map[string]string{phRoot: s.RootID}
}

// projectedBytes is the size of the copy of a node's item (of size bytes,
// its model attributes' values lens long) that index x stores: the item
// for ALL, else the table's and the index's keys and INCLUDE's attributes.
// Stats has the size of the user's attributes only as a whole, so an
// INCLUDE naming one of them counts them all: exact when the node has no
// other, an upper bound otherwise.
func (m *modelLayout) projectedBytes(x *modelIndex, size int, lens map[string]int, s *transform.Stats) int {
	if x.projection == types.ProjectionTypeAll {
		return size
	}
	n, user := 0, false
	seen := map[string]bool{}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		switch l, ok := lens[name]; {
		case ok:
			n += len(name) + l
		case m.byName[name] != nil: // absent on this node
		case name == m.typeName && name != "":
			n += len(name) + len(m.typeValue)
		default:
			user = true
		}
	}
	for _, a := range []*modelAttr{m.pk, m.sk, x.pk, x.sk} {
		if a != nil {
			add(a.name)
		}
	}
	for _, name := range x.include {
		add(name)
	}
	if user {
		n += s.AttrBytes
	}
	return n
}

// renderedLen is the length of an attribute's value for the node s, and
// false when the node does not have the attribute.
func (m *modelLayout) renderedLen(a *modelAttr, s *transform.Stats) (int, bool) {
	if s.ParentID == "" && (a.absentOnRoot || a.tmpl.has(phParent)) {
		return 0, false
	}
	if m.pathIDs {
		return m.renderedLenPathIDs(a, s)
	}
	n := 0
	for _, p := range a.tmpl.parts {
		switch p.ph {
		case "":
			n += len(p.lit)
		case phID:
			n += len(s.ID)
		case phParent:
			n += len(s.ParentID)
		case phRoot:
			n += len(s.RootID)
		case phPath:
			n += s.PathBytes + s.Depth*len(m.delim)
		case phInner:
			if s.Depth > 0 {
				n += s.PathBytes - len(s.RootID) - len(s.ID) + (s.Depth-1)*len(m.delim)
			}
		case phParentSubpath:
			if s.Depth > 1 {
				n += s.PathBytes - len(s.RootID) - len(s.ID) + (s.Depth-2)*len(m.delim)
			}
		case phSubpath:
			if s.Depth > 0 {
				n += s.PathBytes - len(s.RootID) + (s.Depth-1)*len(m.delim)
			}
		case phDepth:
			n += layouts.Digits(s.Depth)
		case phShard:
			n += layouts.Digits(layouts.Shard(s.ID, m.shards))
		}
	}
	if a.num {
		if a.tmpl.has(phShard) {
			return layouts.NumberSize(layouts.Shard(s.ID, m.shards)), true
		}
		return layouts.NumberSize(s.Depth), true
	}
	return n, true
}

// NodeFilter keeps the items carrying the type field; nil without one.
func (m *modelLayout) NodeFilter() *layouts.Filter {
	if m.closure {
		return m.closureFilter()
	}
	if m.prefix {
		return m.prefixFilter()
	}
	if m.typeName == "" {
		return nil
	}
	return &layouts.Filter{
		Expr:   "#ty = :ty",
		Names:  map[string]string{"#ty": m.typeName},
		Values: map[string]types.AttributeValue{":ty": layouts.StringValue(m.typeValue)},
		Text:   fmt.Sprintf("%s = %s", m.typeName, m.typeValue),
	}
}

// IsNode reports whether the item is one of the model's.
func (m *modelLayout) IsNode(item layouts.View) bool {
	if m.prefix {
		b, ok := m.prefixKey(item)
		return ok && !m.foreign(item) && m.base.IsNode(layouts.MapView(b))
	}
	if m.closure {
		r, ok := m.rowDepth(item)
		return ok && r == 0 && !m.foreign(item)
	}
	return !m.foreign(item)
}

// NodeOf returns the id and parent of a model item.
func (m *modelLayout) NodeOf(item layouts.View) (id, parent string, ok bool) {
	if m.foreign(item) || ((m.closure || m.prefix) && !m.IsNode(item)) {
		return "", "", false
	}
	if m.prefix {
		b, _ := m.prefixKey(item)
		return m.base.NodeOf(layouts.MapView(b))
	}
	v, err := m.parse(item, true)
	if err != nil || !v.has[phID] {
		return "", "", false
	}
	return v.id, v.parent, true
}

// Owner is the id the item's table key holds; "" for a key that does not
// read back through the model's key templates (another entity's).
func (m *modelLayout) Owner(item layouts.View) string {
	if m.prefix {
		b, ok := m.prefixKey(item)
		if !ok {
			return ""
		}
		return m.base.Owner(layouts.MapView(b))
	}
	if m.located {
		// Its key is the leaf's name; the index's keys give the rest.
		id, _, ok := m.NodeOf(item)
		if !ok {
			return ""
		}
		return id
	}
	var v nodeVals
	for _, a := range []*modelAttr{m.pk, m.sk} {
		if a == nil {
			continue
		}
		av := item.Get(a.name)
		_, isN := av.(*types.AttributeValueMemberN)
		if av == nil || isN != a.num || !a.tmpl.match(valueText(av), &v, m.delim) {
			return ""
		}
	}
	return v.id
}

// PathKeyed is the base layout's.
func (m *modelLayout) PathKeyed() bool { return m.base.PathKeyed() }

// Query runs the base layout's query with its reads translated to the
// model's attributes. Without an index serving the base's ByParent,
// children are the descendants at relative depth 1, read from ByPath.
func (m *modelLayout) Query(ctx context.Context, r layouts.Reads, q layouts.Request) ([]layouts.Result, error) {
	if m.fullPath {
		return m.fullPathQuery(ctx, r, q)
	}
	if m.located {
		return m.locatedQuery(ctx, r, q)
	}
	if q.Kind == layouts.QueryChildren && m.index("ByParent") == nil && !m.closure {
		q.Kind, q.MinDepth, q.MaxDepth = layouts.QueryDescendants, 1, 1
	}
	return m.base.Query(ctx, &modelReads{m: m, r: r}, q)
}

// Costs is the base layout's cost model, given the base's items, plus the
// BatchGetItem that follows a Query of an index that does not project every
// attribute (descendants, and children when their index is such).
func (m *modelLayout) Costs(f *transform.Forest, sample []int32) layouts.CostModel {
	if m.fullPath {
		return m.fullPathCosts(f, sample)
	}
	if m.located {
		return m.locatedCosts(f, sample)
	}
	c := &modelCosts{m: m, base: m.base.Costs(f, sample), f: f, sample: sample, size: make([]int32, f.Len())}
	if m.closure && m.wholeRows(m.index("ByAncestor")) {
		c.rows = newClosureRowCosts(f, sample)
	}
	return c
}

type modelCosts struct {
	m      *modelLayout
	base   layouts.CostModel
	f      *transform.Forest
	sample []int32
	size   []int32 // each node's item
	rows   *closureRowCosts
}

func (c *modelCosts) Add(item layouts.Item, size int) (int32, int32, error) {
	if c.m.foreign(layouts.MapView(item)) {
		return -1, -1, nil
	}
	b, err := c.m.toBase(item)
	if err != nil {
		return -1, -1, err
	}
	var node, other int32
	// The descendants' Query reads ByAncestor's copy of a closure row,
	// which is smaller when the index projects fewer attributes.
	var closure bool
	if node, other, err, closure = layouts.AddClosureRow(c.base, b, size, c.m.indexReadBytes(c.m.index("ByAncestor"), item, size)); !closure {
		node, other, err = c.base.Add(b, size)
	}
	if err != nil || node < 0 {
		return node, other, err
	}
	if !c.m.closure {
		c.size[node] = int32(size)
		// A Query of an index that projects fewer attributes reads its
		// copy of the item, not the item.
		for _, x := range c.m.indexes {
			if x.projection != types.ProjectionTypeAll {
				layouts.SetIndexSize(c.base, x.serves, node, c.m.indexReadBytes(x, item, size))
			}
		}
		return node, other, nil
	}
	// A closure row: the node's own, or the row naming the ancestor
	// other r levels up.
	r, _ := strconv.Atoi(valueText(b[modelPrivate+"RelativeDepth"]))
	if r == 0 {
		c.size[node] = int32(size)
	}
	if c.rows != nil {
		c.rows.add(other, r, size)
	}
	return node, other, nil
}

// partial reports whether the model's index serving the base's index
// serves leaves attributes out.
func (c *modelCosts) partial(serves string) bool {
	x := c.m.index(serves)
	return x != nil && x.projection != types.ProjectionTypeAll
}

func (c *modelCosts) Estimate(k int) layouts.QueryCosts {
	out := c.base.Estimate(k)
	if c.m.prefix {
		return out // the prefix layout's reads, of the table: no index
	}
	if c.m.closure {
		// Ancestors read the table; children and descendants the index,
		// then the rows found whole when the index holds less.
		if c.rows != nil {
			out.Children.Add(c.rows.child[k].Cost())
			out.Descendants.Add(c.rows.desc[k].Cost())
			out.Depth2.Add(c.rows.band2[k].Cost())
		}
		return out
	}
	i := c.sample[k]
	// batch prices reading the items of nodes whole.
	batch := func(nodes []int32) layouts.Cost {
		var b layouts.BatchCost
		for _, y := range nodes {
			b.Add(c.size[y])
		}
		return b.Cost()
	}
	// below returns the descendants of i down to relative depth max (-1:
	// all), and the nodes above that band with children (adjacency's
	// walk).
	below := func(maxRel int) (nodes, parents []int32) {
		type at struct {
			y   int32
			rel int
		}
		stack := []at{{i, 0}}
		for len(stack) > 0 {
			a := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if a.rel > 0 {
				nodes = append(nodes, a.y)
			}
			if maxRel >= 0 && a.rel >= maxRel {
				continue
			}
			if len(c.f.Children(int(a.y))) > 0 {
				parents = append(parents, a.y)
			}
			for _, ch := range c.f.Children(int(a.y)) {
				stack = append(stack, at{ch, a.rel + 1})
			}
		}
		return nodes, parents
	}
	children := c.f.Children(int(i))
	all, _ := below(-1)
	two, _ := below(2)

	if c.m.baseName == layouts.AdjacencyName {
		// Each children Query of the walk is followed by the
		// BatchGetItem of what it found.
		if c.partial("ByParent") {
			_, ps := below(-1)
			for _, y := range ps {
				out.Descendants.Add(batch(c.f.Children(int(y))))
			}
			_, ps = below(2)
			for _, y := range ps {
				out.Depth2.Add(batch(c.f.Children(int(y))))
			}
			out.Children.Add(batch(children))
		}
		return out
	}

	// The path layouts: descendants are one Query of ByPath (after the
	// node's GetItem), whose depth band is a filter on the server only
	// when the model stores the depth as it is and the index projects it.
	x := c.m.index("ByPath")
	filterKept := false
	for _, a := range c.m.attrs {
		if a.tmpl.bare() && a.tmpl.has(phDepth) && a.num && x.projects(a.name, c.m) {
			filterKept = true
		}
	}
	if c.partial("ByPath") {
		out.Descendants.Add(batch(all))
		if filterKept {
			out.Depth2.Add(batch(two))
		} else {
			out.Depth2.Add(batch(all))
		}
	}
	switch {
	case c.m.index("ByParent") != nil:
		if c.partial("ByParent") {
			out.Children.Add(batch(children))
		}
	default:
		// Children are the descendants one level down: the node's
		// GetItem, then a Query of ByPath that reads exactly the
		// children when the sort key ends with {inner} (an equality),
		// and the whole subtree otherwise.
		inner := x.sk.tmpl.parts[len(x.sk.tmpl.parts)-1].ph == phInner
		read, found := all, all
		if inner {
			read, found = children, children
		} else if filterKept {
			found = children
		}
		// ByPath's copies of the items read.
		var readBytes layouts.SizeSum
		byPath := layouts.IndexSizes(c.base, "ByPath")
		for _, y := range read {
			readBytes.Add(int(byPath[y]))
		}
		cost := layouts.GetCost(int64(c.size[i]))
		cost.Add(layouts.QueryCost(readBytes))
		if c.partial("ByPath") {
			cost.Add(batch(found))
		}
		cost.Nodes = int64(len(children))
		out.Children = cost
	}
	return out
}
