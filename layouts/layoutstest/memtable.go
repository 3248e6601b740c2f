package layoutstest

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// MemTable is a table in memory, holding a layout's items: the layouts.Reads
// the conformance suite queries a layout with. It answers as DynamoDB would,
// refuses what DynamoDB would refuse (a key that is not the table's, an
// expression that names an attribute or a value it was not given, a key
// condition that is not on the index's keys, a BatchGetItem key twice), and
// counts what DynamoDB would bill for eventually consistent reads.
type MemTable struct {
	spec     layouts.TableSpec
	items    []layouts.Item
	byKey    map[string]layouts.Item
	pageSize int // items a Query page holds at most, to make queries follow pages

	mu   sync.Mutex
	cost layouts.Cost // Nodes unused
	// parts holds the items by the value of an attribute, for each
	// attribute a Query has named as a partition key: the items of a
	// partition, in the table's order.
	parts map[string]map[string][]layouts.Item
}

// partition returns the items whose attribute attr is v.
func (m *MemTable) partition(attr string, v types.AttributeValue) []layouts.Item {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts == nil {
		m.parts = map[string]map[string][]layouts.Item{}
	}
	p, ok := m.parts[attr]
	if !ok {
		p = map[string][]layouts.Item{}
		for _, it := range m.items {
			if x, ok := it[attr]; ok {
				k := fmt.Sprintf("%T", x) + keyText(x)
				p[k] = append(p[k], it)
			}
		}
		m.parts[attr] = p
	}
	return p[fmt.Sprintf("%T", v)+keyText(v)]
}

// The billing of a Query that finds nothing, as DynamoDB's.
const memEmptyQuery = 0.5

// NewMemTable is a table of the layout's items under spec, whose Query
// pages hold at most pageSize items.
func NewMemTable(spec layouts.TableSpec, items []layouts.Item, pageSize int) *MemTable {
	m := &MemTable{spec: spec, items: items, pageSize: pageSize, byKey: make(map[string]layouts.Item, len(items))}
	for _, it := range items {
		m.byKey[layouts.KeyOf(spec, it)] = it
	}
	return m
}

func (m *MemTable) bill(requests, items int64, rcu float64) {
	m.mu.Lock()
	m.cost.Requests += requests
	m.cost.Items += items
	m.cost.RCU += rcu
	m.mu.Unlock()
}

func (m *MemTable) take() layouts.Cost {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cost
	m.cost = layouts.Cost{}
	return c
}

// Take returns what the reads since the last Take were billed (requests,
// items read, RCU), and starts counting again.
func (m *MemTable) Take() layouts.Cost { return m.take() }

func itemRCU(item layouts.Item) float64 {
	return 0.5 * float64(max(1, (transform.ItemSize(item)+4095)/4096))
}

// checkKey fails unless key is exactly the table's key attributes.
func (m *MemTable) checkKey(key layouts.Item) error {
	want := 1
	if m.spec.SK != nil {
		want = 2
		if _, ok := key[m.spec.SK.Name]; !ok {
			return fmt.Errorf("key %s has no sort key %q", DDBJSON(key), m.spec.SK.Name)
		}
	}
	if _, ok := key[m.spec.PK.Name]; !ok || len(key) != want {
		return fmt.Errorf("key %s is not the table's key", DDBJSON(key))
	}
	return nil
}

func (m *MemTable) find(key layouts.Item) layouts.Item { return m.byKey[layouts.KeyOf(m.spec, key)] }

func (m *MemTable) GetItem(_ context.Context, key layouts.Item) (layouts.Item, error) {
	if err := m.checkKey(key); err != nil {
		return nil, fmt.Errorf("GetItem: %w", err)
	}
	it := m.find(key)
	if it == nil {
		m.bill(1, 0, 0.5)
		return nil, nil
	}
	m.bill(1, 1, itemRCU(it))
	return it, nil
}

func (m *MemTable) BatchGet(_ context.Context, keys []layouts.Item) ([]layouts.Item, error) {
	seen := map[string]bool{}
	var found []layouts.Item
	for _, k := range keys {
		if err := m.checkKey(k); err != nil {
			return nil, fmt.Errorf("BatchGetItem: %w", err)
		}
		if s := layouts.KeyOf(m.spec, k); seen[s] {
			return nil, fmt.Errorf("BatchGetItem: key %s twice", DDBJSON(k))
		} else {
			seen[s] = true
		}
		if it := m.find(k); it != nil {
			found = append(found, it)
			m.bill(0, 1, itemRCU(it))
		}
	}
	m.bill(int64((len(keys)+layouts.MaxBatchGetKeys-1)/layouts.MaxBatchGetKeys), 0, 0)
	// In no particular order.
	slices.Reverse(found)
	return found, nil
}

func (m *MemTable) Query(_ context.Context, in layouts.QueryInput, page func([]layouts.Item) error) error {
	pk, sk := m.spec.PK, m.spec.SK
	// project is the index's copy of an item, as a Query of it reads and
	// returns it: the item, or what a table model's index projects.
	project := func(it layouts.Item) layouts.Item { return it }
	if in.Index != "" {
		i := slices.IndexFunc(m.spec.Indexes, func(ix layouts.IndexSpec) bool { return ix.Name == in.Index })
		if i < 0 {
			return fmt.Errorf("Query: no index %q", in.Index)
		}
		ix := m.spec.Indexes[i]
		pk, sk = ix.PK, ix.SK
		if ix.Projection != "" && ix.Projection != types.ProjectionTypeAll {
			keep := []string{m.spec.PK.Name, ix.PK.Name}
			if m.spec.SK != nil {
				keep = append(keep, m.spec.SK.Name)
			}
			if ix.SK != nil {
				keep = append(keep, ix.SK.Name)
			}
			if ix.Projection == types.ProjectionTypeInclude {
				keep = append(keep, ix.NonKeyAttributes...)
			}
			project = func(it layouts.Item) layouts.Item {
				out := layouts.Item{}
				for _, k := range keep {
					if v, ok := it[k]; ok {
						out[k] = v
					}
				}
				return out
			}
		}
	}
	u := newUses(in.Names, in.Values)
	keyConds, err := parseConds(in.KeyCondition, u)
	if err != nil {
		return fmt.Errorf("Query: key condition %q: %w", in.KeyCondition, err)
	}
	if len(keyConds) == 0 || len(keyConds) > 2 || keyConds[0].attr != pk.Name || keyConds[0].op != "=" {
		return fmt.Errorf("Query: key condition %q is not PK = v [AND a condition on the sort key]", in.KeyCondition)
	}
	if len(keyConds) == 2 && (sk == nil || keyConds[1].attr != sk.Name || keyConds[1].op == "contains") {
		return fmt.Errorf("Query: key condition %q: the second condition is not on the sort key", in.KeyCondition)
	}
	var filter []cond
	if in.Filter != "" {
		if filter, err = parseConds(in.Filter, u); err != nil {
			return fmt.Errorf("Query: filter %q: %w", in.Filter, err)
		}
		for _, c := range filter {
			if c.attr == pk.Name || (sk != nil && c.attr == sk.Name) {
				return fmt.Errorf("Query: filter %q is on a key attribute", in.Filter)
			}
		}
	}
	if err := u.allUsed(); err != nil {
		return fmt.Errorf("Query: %w", err)
	}
	var read []layouts.Item
	for _, it := range m.partition(pk.Name, keyConds[0].vals[0]) {
		if _, ok := it[pk.Name]; !ok {
			continue
		}
		if sk != nil {
			if _, ok := it[sk.Name]; !ok {
				continue
			}
		}
		if holds(keyConds, it) {
			read = append(read, it)
		}
	}
	if sk != nil {
		slices.SortStableFunc(read, func(a, b layouts.Item) int { return compareValues(a[sk.Name], b[sk.Name]) })
	}
	if len(read) == 0 {
		m.bill(1, 0, memEmptyQuery)
		m.mu.Lock()
		m.cost.EmptyQueries++
		m.mu.Unlock()
		return nil
	}
	size := m.pageSize
	if in.Limit > 0 {
		size = min(size, int(in.Limit))
	}
	for start := 0; start < len(read); start += size {
		pg := read[start:min(start+size, len(read))]
		bytes := 0
		var kept []layouts.Item
		for _, it := range pg {
			it = project(it)
			bytes += transform.ItemSize(it)
			if holds(filter, it) {
				kept = append(kept, it)
			}
		}
		m.bill(1, int64(len(pg)), 0.5*float64(max(1, (bytes+4095)/4096)))
		if len(kept) > 0 {
			if err := page(kept); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *MemTable) Scan(_ context.Context, filter *layouts.Filter, fn func([]layouts.Item) error) error {
	var conds []cond
	if filter != nil {
		u := newUses(filter.Names, filter.Values)
		var err error
		if conds, err = parseConds(filter.Expr, u); err != nil {
			return fmt.Errorf("Scan: filter %q: %w", filter.Expr, err)
		}
		if err := u.allUsed(); err != nil {
			return fmt.Errorf("Scan: %w", err)
		}
	}
	for start := 0; start < len(m.items); start += m.pageSize {
		pg := m.items[start:min(start+m.pageSize, len(m.items))]
		var kept []layouts.Item
		for _, it := range pg {
			if holds(conds, it) {
				kept = append(kept, it)
			}
		}
		m.bill(1, int64(len(pg)), 0)
		if err := fn(kept); errors.Is(err, layouts.ErrStopScan) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// cond is one condition of an expression: attr op vals.
type cond struct {
	attr string
	op   string // =, <, <=, >, >=, BETWEEN, begins_with, contains
	vals []types.AttributeValue
}

// uses resolves an expression's #names and :values, and notes which were
// used: DynamoDB refuses one given and not used.
type uses struct {
	names        map[string]string
	values       map[string]types.AttributeValue
	usedN, usedV map[string]bool
}

func newUses(names map[string]string, values map[string]types.AttributeValue) *uses {
	return &uses{names: names, values: values, usedN: map[string]bool{}, usedV: map[string]bool{}}
}

func (u *uses) name(tok string) (string, error) {
	if !strings.HasPrefix(tok, "#") {
		return "", fmt.Errorf("%q: attribute names go through ExpressionAttributeNames here", tok)
	}
	n, ok := u.names[tok]
	if !ok {
		return "", fmt.Errorf("%s is not in ExpressionAttributeNames", tok)
	}
	u.usedN[tok] = true
	return n, nil
}

func (u *uses) value(tok string) (types.AttributeValue, error) {
	v, ok := u.values[tok]
	if !ok {
		return nil, fmt.Errorf("%s is not in ExpressionAttributeValues", tok)
	}
	u.usedV[tok] = true
	return v, nil
}

func (u *uses) allUsed() error {
	for k := range u.names {
		if !u.usedN[k] {
			return fmt.Errorf("ExpressionAttributeNames %s unused", k)
		}
	}
	for k := range u.values {
		if !u.usedV[k] {
			return fmt.Errorf("ExpressionAttributeValues %s unused", k)
		}
	}
	return nil
}

// spaced puts spaces around an expression's punctuation.
var spaced = strings.NewReplacer("(", " ( ", ")", " ) ", ",", " , ")

// parseConds parses conditions joined by AND: "#a = :x", "#a >= :x",
// "#a BETWEEN :x AND :y", "begins_with(#a, :x)", "contains(#a, :x)".
func parseConds(expr string, u *uses) ([]cond, error) {
	toks := strings.Fields(spaced.Replace(expr))
	next := func() string {
		if len(toks) == 0 {
			return ""
		}
		t := toks[0]
		toks = toks[1:]
		return t
	}
	expect := func(want string) error {
		if got := next(); got != want {
			return fmt.Errorf("want %q, got %q", want, got)
		}
		return nil
	}
	var out []cond
	for {
		var c cond
		tok := next()
		switch tok {
		case "begins_with", "contains":
			c.op = tok
			if err := expect("("); err != nil {
				return nil, err
			}
			a, err := u.name(next())
			if err != nil {
				return nil, err
			}
			c.attr = a
			if err := expect(","); err != nil {
				return nil, err
			}
			v, err := u.value(next())
			if err != nil {
				return nil, err
			}
			c.vals = []types.AttributeValue{v}
			if err := expect(")"); err != nil {
				return nil, err
			}
		default:
			a, err := u.name(tok)
			if err != nil {
				return nil, err
			}
			c.attr = a
			c.op = next()
			n := 1
			switch c.op {
			case "=", "<", "<=", ">", ">=":
			case "BETWEEN":
				n = 2
			default:
				return nil, fmt.Errorf("unknown operator %q", c.op)
			}
			for k := range n {
				if k == 1 {
					if err := expect("AND"); err != nil {
						return nil, err
					}
				}
				v, err := u.value(next())
				if err != nil {
					return nil, err
				}
				c.vals = append(c.vals, v)
			}
		}
		out = append(out, c)
		switch tok := next(); tok {
		case "":
			return out, nil
		case "AND":
		default:
			return nil, fmt.Errorf("want AND or the end, got %q", tok)
		}
	}
}

// holds reports whether the item meets every condition.
func holds(conds []cond, it layouts.Item) bool {
	for _, c := range conds {
		v, ok := it[c.attr]
		if !ok {
			return false
		}
		switch c.op {
		case "=":
			ok = sameType(v, c.vals[0]) && compareValues(v, c.vals[0]) == 0
		case "<":
			ok = sameType(v, c.vals[0]) && compareValues(v, c.vals[0]) < 0
		case "<=":
			ok = sameType(v, c.vals[0]) && compareValues(v, c.vals[0]) <= 0
		case ">":
			ok = sameType(v, c.vals[0]) && compareValues(v, c.vals[0]) > 0
		case ">=":
			ok = sameType(v, c.vals[0]) && compareValues(v, c.vals[0]) >= 0
		case "BETWEEN":
			ok = sameType(v, c.vals[0]) && compareValues(v, c.vals[0]) >= 0 && compareValues(v, c.vals[1]) <= 0
		case "begins_with", "contains":
			s, ok1 := v.(*types.AttributeValueMemberS)
			x, ok2 := c.vals[0].(*types.AttributeValueMemberS)
			ok = ok1 && ok2
			if ok && c.op == "begins_with" {
				ok = strings.HasPrefix(s.Value, x.Value)
			} else if ok {
				ok = strings.Contains(s.Value, x.Value)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func sameType(a, b types.AttributeValue) bool {
	switch a.(type) {
	case *types.AttributeValueMemberS:
		_, ok := b.(*types.AttributeValueMemberS)
		return ok
	case *types.AttributeValueMemberN:
		_, ok := b.(*types.AttributeValueMemberN)
		return ok
	}
	return false
}

// compareValues orders two S values as bytes and two N values by value.
func compareValues(a, b types.AttributeValue) int {
	if x, ok := a.(*types.AttributeValueMemberN); ok {
		if y, ok := b.(*types.AttributeValueMemberN); ok {
			p, _, err1 := big.ParseFloat(x.Value, 10, 200, big.ToNearestEven)
			q, _, err2 := big.ParseFloat(y.Value, 10, 200, big.ToNearestEven)
			if err1 == nil && err2 == nil {
				return p.Cmp(q)
			}
		}
	}
	return strings.Compare(keyText(a), keyText(b))
}
