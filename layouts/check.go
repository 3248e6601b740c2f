package layouts

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// ErrItem is what Node's errors wrap: an item that is not an item of the
// layout (a layout attribute missing or of the wrong type, a key that does
// not parse). It usually means the wrong --layout, --attr or --delimiter.
var ErrItem = errors.New("layouts: item does not fit the layout")

func errorf(format string, args ...any) error {
	return fmt.Errorf("layouts: "+format, args...)
}

// Check returns the layout's problems with one node, as SPEC §2 lists them:
// an id containing the delimiter (wrapping transform.ErrDelimiter), a key
// over DynamoDB's limit in the table or any index (transform.ErrKeyTooLong),
// an item over 400 KB (transform.ErrItemTooLarge). It measures the node's
// items with l.Measure rather than building them. It returns nil when the
// node is fine, and otherwise every problem, each matched by errors.Is. The
// caller adds where the node came from.
func Check(l Layout, s *transform.Stats) error {
	return NewChecker(l).Check(s)
}

// Checker runs Check on many nodes of one layout, reusing its buffers, which
// is what validating millions of nodes wants. It is not safe for concurrent
// use.
type Checker struct {
	l Layout
	m *Measure
	t TableSpec
}

// NewChecker returns a Checker for the layout.
func NewChecker(l Layout) *Checker {
	return &Checker{l: l, m: NewMeasure(l), t: l.Table()}
}

// Check is Check(l, s) for the Checker's layout.
func (c *Checker) Check(s *transform.Stats) error {
	l := c.l
	var errs []error
	if d := l.Delimiter(); PathIDs(l) {
		if err := CheckPathID(s.ID, s.ParentID, d); err != nil {
			errs = append(errs, err)
		}
	} else if d != "" && strings.Contains(s.ID, d) {
		errs = append(errs, fmt.Errorf("%w: the id contains %q, the delimiter of the %s layout; remove it from the id, or choose another delimiter with --delimiter",
			transform.ErrDelimiter, d, l.Name()))
	}
	if ml, ok := l.(Model); ok {
		errs = append(errs, ml.CheckNode(s)...)
	}
	m := c.m
	keys, cols := m.Keys, m.Collections
	clear(keys)
	clear(cols)
	*m = Measure{Keys: keys, Collections: cols}
	l.Measure(s, m)
	t := c.t
	for slot, n := range m.Keys {
		kind, limit := "partition", transform.MaxPartitionKeyBytes
		if slot%2 == 1 {
			kind, limit = "sort", transform.MaxSortKeyBytes
		}
		if n <= limit {
			continue
		}
		key, where := t.PK, "the table"
		if i := slot/2 - 1; i >= 0 && i < len(t.Indexes) {
			key, where = t.Indexes[i].PK, "index "+t.Indexes[i].Name
			if slot%2 == 1 && t.Indexes[i].SK != nil {
				key = *t.Indexes[i].SK
			}
		} else if slot%2 == 1 && t.SK != nil {
			key = *t.SK
		}
		errs = append(errs, fmt.Errorf("%w: the %s key %s of %s is %d bytes for this node, over the limit of %d; %s",
			transform.ErrKeyTooLong, kind, key.Name, where, n, limit, keyHint(l, key.Name)))
	}
	if m.MaxItemBytes > transform.MaxItemBytes {
		hint := "shrink the node's attributes"
		if l.Name() == ClosureName {
			hint += ", or copy fewer of them to the ancestor rows with --closure-copy"
		}
		errs = append(errs, fmt.Errorf("%w: an item of the %s layout for this node is %d bytes, over DynamoDB's limit of %d; %s",
			transform.ErrItemTooLarge, l.Name(), m.MaxItemBytes, transform.MaxItemBytes, hint))
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return transform.Problems(errs)
}

// CheckKeys returns an error wrapping transform.ErrEmptyKey when a key
// attribute of the table or of one of its indexes holds an empty string or
// empty binary in item, which DynamoDB refuses: it names the attribute and
// the index. An index's key attribute that is absent is fine (the item is
// not in that index); the table's keys are the layout's to set. It returns
// nil otherwise. It is the last guard before an item leaves treeport:
// validation (Check) finds the same nodes first, with where they are.
func CheckKeys(spec TableSpec, item Item) error {
	var errs []error
	check := func(k KeyAttr, role, where string) {
		if emptyValue(item[k.Name]) {
			errs = append(errs, fmt.Errorf("%w: the %s key %s of %s would be empty for this node, and DynamoDB refuses an empty key", transform.ErrEmptyKey, role, k.Name, where))
		}
	}
	check(spec.PK, "partition", "the table")
	if spec.SK != nil {
		check(*spec.SK, "sort", "the table")
	}
	for _, ix := range spec.Indexes {
		check(ix.PK, "partition", "index "+ix.Name)
		if ix.SK != nil {
			check(*ix.SK, "sort", "index "+ix.Name)
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return transform.Problems(errs)
}

// emptyValue reports whether v is an empty string or empty binary: a value
// no key may hold.
func emptyValue(v types.AttributeValue) bool {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value == ""
	case *types.AttributeValueMemberB:
		return len(x.Value) == 0
	}
	return false
}

// keyHint says what to do about a key that is too long.
func keyHint(l Layout, name string) string {
	canon := name
	if b, ok := l.(interface{ layoutBase() *base }); ok {
		canon = b.layoutBase().canon[name]
	}
	switch canon {
	case "Path", "Key":
		return "the ids from the root to the node are too long together: shorten them, or choose the closure layout, whose keys do not grow with depth"
	case "ParentId", "AncestorId":
		return "an id above this node is too long: shorten it"
	}
	return "shorten the id"
}

// CheckAttrName returns an error wrapping transform.ErrReservedAttr when a
// user attribute may not be called name under layout l: the name of one of
// the layout's attributes (the error says which --attr renames it), or for
// prefix a name starting with the delimiter. It returns nil otherwise.
func CheckAttrName(l Layout, name string) error {
	if b, ok := l.(interface{ layoutBase() *base }); ok {
		return b.layoutBase().attrNameError(name)
	}
	if slices.Contains(l.Reserved(), name) {
		return fmt.Errorf("%w: attribute %q is a layout attribute of %s; rename the layout's with --attr", transform.ErrReservedAttr, name, l.Name())
	}
	return nil
}

// WriteUnits is what writing (or deleting) the item costs, as DynamoDB
// bills it: one WCU per started KB of the item for the table and, for each
// index the item is in, one per started KB of the copy that index keeps
// (IndexUnits): the whole item when the index projects ALL, as every
// layout's do, and less for a model's KEYS_ONLY or INCLUDE index.
func WriteUnits(spec TableSpec, item Item) int {
	size := transform.ItemSize(item)
	units := transform.WCU(size)
	for _, ix := range spec.Indexes {
		units += IndexUnits(spec, ix, item, size)
	}
	return units
}

// IndexUnits is what writing (or deleting) the copy of item (of size
// bytes) that index ix keeps costs: one WCU per started KB of the copy
// (IndexItemBytes), 0 when the item is not in the index. "Larger index
// entries require additional write capacity units" (DynamoDB Developer
// Guide, "Global secondary indexes": write capacity units); DynamoDB
// Local bills a 3 KB item's KEYS_ONLY copy 1 WCU, its ALL copy 3.
func IndexUnits(spec TableSpec, ix IndexSpec, item Item, size int) int {
	if !inIndex(ix, item) {
		return 0
	}
	return transform.WCU(IndexItemBytes(spec, ix, item, size))
}

// IndexChange is what a put over an existing item does to one index.
type IndexChange int

// The ways a put can change an index.
const (
	// IndexUntouched: the item is in the index neither before nor after,
	// or it keeps its index key and no projected attribute changes.
	IndexUntouched IndexChange = iota
	// IndexEnter: the item gets the index's key attributes.
	IndexEnter
	// IndexLeave: the item loses them.
	IndexLeave
	// IndexUpdate: the item keeps its index key; a projected attribute
	// changes.
	IndexUpdate
	// IndexRekey: the item's index key changes.
	IndexRekey
)

// ReplaceUnits is what a put of item new over item old (same table key)
// costs, by DynamoDB's rules (ReplaceUnitsBy). old nil is a put of a new
// item (WriteUnits).
func ReplaceUnits(spec TableSpec, old, new Item) int {
	if old == nil {
		return WriteUnits(spec, new)
	}
	so, sn := transform.ItemSize(old), transform.ItemSize(new)
	return ReplaceUnitsBy(spec, transform.WCU(so), transform.WCU(sn), func(i int) (IndexChange, int, int) {
		ix := spec.Indexes[i]
		uo, un := IndexUnits(spec, ix, old, so), IndexUnits(spec, ix, new, sn)
		ko, inOld := indexKey(ix, old)
		kn, inNew := indexKey(ix, new)
		switch {
		case inOld && inNew && ko == kn:
			if projectedEqual(ix, old, new) {
				return IndexUntouched, uo, un
			}
			return IndexUpdate, uo, un
		case inOld && inNew:
			return IndexRekey, uo, un
		case inOld:
			return IndexLeave, uo, un
		case inNew:
			return IndexEnter, uo, un
		}
		return IndexUntouched, uo, un
	})
}

// ReplaceUnitsBy prices a put of an item whose table write costs newUnits
// over one whose costs oldUnits, change(i) saying what it does to index i
// and what the old and the new item's copies there cost (IndexUnits): the
// table write is priced at the larger of the two items ("PutItem: ... the
// larger of the two item sizes", "Capacity unit consumption for writes",
// DynamoDB Developer Guide); in each index ("Provisioned throughput
// considerations for Global Secondary Indexes"), an update is one write at
// the larger copy, a changed index key two (a delete of the old copy and a
// put of the new), a copy that enters or leaves the index one.
func ReplaceUnitsBy(spec TableSpec, oldUnits, newUnits int, change func(i int) (c IndexChange, oldIx, newIx int)) int {
	units := max(oldUnits, newUnits)
	for i := range spec.Indexes {
		switch c, uo, un := change(i); c {
		case IndexUpdate:
			units += max(uo, un)
		case IndexRekey:
			units += uo + un
		case IndexLeave:
			units += uo
		case IndexEnter:
			units += un
		}
	}
	return units
}

// IndexKeyAttrs returns the item's key attributes in index ix, or nil when
// the item is not in the index.
func IndexKeyAttrs(ix IndexSpec, item Item) Item {
	pk, ok := item[ix.PK.Name]
	if !ok {
		return nil
	}
	key := Item{ix.PK.Name: pk}
	if ix.SK != nil {
		sk, ok := item[ix.SK.Name]
		if !ok {
			return nil
		}
		key[ix.SK.Name] = sk
	}
	return key
}

// indexKey is the item's key in index ix, and whether the item is in it.
func indexKey(ix IndexSpec, item Item) (string, bool) {
	pk, ok := item[ix.PK.Name]
	if !ok {
		return "", false
	}
	var b strings.Builder
	appendKey(&b, pk)
	if ix.SK != nil {
		sk, ok := item[ix.SK.Name]
		if !ok {
			return "", false
		}
		appendKey(&b, sk)
	}
	return b.String(), true
}

// projectedEqual reports whether old and new project the same attributes
// into index ix: every attribute for ALL, the keys (equal already) for
// KEYS_ONLY, and the named ones too for INCLUDE.
func projectedEqual(ix IndexSpec, old, new Item) bool {
	switch ix.Projection {
	case types.ProjectionTypeKeysOnly:
		return true
	case types.ProjectionTypeInclude:
		for _, name := range ix.NonKeyAttributes {
			if !reflect.DeepEqual(old[name], new[name]) {
				return false
			}
		}
		return true
	}
	return len(old) == len(new) && reflect.DeepEqual(old, new)
}

// IndexesOf is the number of the table's indexes the item lands in: those
// whose key attributes it has.
func IndexesOf(spec TableSpec, item Item) int {
	n := 0
	for _, ix := range spec.Indexes {
		if inIndex(ix, item) {
			n++
		}
	}
	return n
}

// inIndex reports whether the item has index ix's key attributes.
func inIndex(ix IndexSpec, item Item) bool {
	if _, ok := item[ix.PK.Name]; !ok {
		return false
	}
	if ix.SK != nil {
		if _, ok := item[ix.SK.Name]; !ok {
			return false
		}
	}
	return true
}

// IndexItemBytes is the size of the copy of an item (of size bytes) that
// index ix of the table stores and bills: the whole item when the index
// projects ALL, and else only what it projects, the table's and the
// index's key attributes and, for INCLUDE, its non-key attributes that the
// item has. DynamoDB bills the copy's bytes and its 100 bytes of overhead.
func IndexItemBytes(spec TableSpec, ix IndexSpec, item Item, size int) int {
	if ix.Projection == "" || ix.Projection == types.ProjectionTypeAll {
		return size
	}
	n := 0
	seen := make(map[string]bool, 4+len(ix.NonKeyAttributes))
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if v, ok := item[name]; ok {
			n += len(name) + transform.ValueSize(v)
		}
	}
	add(spec.PK.Name)
	if spec.SK != nil {
		add(spec.SK.Name)
	}
	add(ix.PK.Name)
	if ix.SK != nil {
		add(ix.SK.Name)
	}
	if ix.Projection == types.ProjectionTypeInclude {
		for _, a := range ix.NonKeyAttributes {
			add(a)
		}
	}
	return n
}

// KeyOf returns a string that identifies the item's primary key in the
// table: two items have the same KeyOf exactly when DynamoDB sees the same
// key (numbers are compared by value, so "1" and "1.0" are one key). A
// missing key attribute is encoded too, so KeyOf never fails.
func KeyOf(spec TableSpec, item Item) string {
	var b strings.Builder
	appendKey(&b, item[spec.PK.Name])
	if spec.SK != nil {
		appendKey(&b, item[spec.SK.Name])
	}
	return b.String()
}

// appendKey writes one key value, tagged with its type and prefixed with its
// length so that the concatenation of two is unambiguous.
func appendKey(b *strings.Builder, v types.AttributeValue) {
	var tag, s string
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if v != nil {
			tag, s = "S", v.Value
		}
	case *types.AttributeValueMemberN:
		if v != nil {
			tag, s = "N", CanonicalNumber(v.Value)
		}
	case *types.AttributeValueMemberB:
		if v != nil {
			tag, s = "B", string(v.Value)
		}
	}
	if tag == "" {
		tag, s = "?", typeName(v)
	}
	b.WriteString(tag)
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}
