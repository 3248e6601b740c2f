package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// An existing table may have indexes of its own besides the layout's, keyed
// on the user's attributes (a GSI on "email", say). DynamoDB refuses a write
// whose value for such a key is not of the key's declared type, is an empty
// string or binary, or is longer than a key may be; the whole batch fails
// with a ValidationException. Validation cannot know those keys without
// the table, so a load into an existing table reads them with DescribeTable
// and checks every item before the first write: DynamoDB's writer is never
// the first to find such an item, and nothing is written half-way.

// IndexKey is a key attribute of one of a table's indexes that the layout
// does not write itself.
type IndexKey struct {
	Index string
	Name  string
	Type  types.ScalarAttributeType
	Sort  bool // the index's sort key (1024 bytes at most), else its partition key (2048)
}

// TableIndexKeys returns the key attributes of table's indexes that are not
// attributes of the layout (spec): its keys, its indexes' keys.
func TableIndexKeys(ctx context.Context, client ddb.DescribeAPI, table string, spec layouts.TableSpec) ([]IndexKey, error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, describeError(table, err)
	}
	if out.Table == nil {
		return nil, nil
	}
	return indexKeys(out.Table, spec), nil
}

func indexKeys(t *types.TableDescription, spec layouts.TableSpec) []IndexKey {
	own := map[string]bool{spec.PK.Name: true}
	if spec.SK != nil {
		own[spec.SK.Name] = true
	}
	for _, ix := range spec.Indexes {
		own[ix.PK.Name] = true
		if ix.SK != nil {
			own[ix.SK.Name] = true
		}
	}
	declared := map[string]types.ScalarAttributeType{}
	for _, a := range t.AttributeDefinitions {
		declared[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	var keys []IndexKey
	add := func(index string, schema []types.KeySchemaElement) {
		for _, k := range schema {
			name := aws.ToString(k.AttributeName)
			if own[name] {
				continue
			}
			keys = append(keys, IndexKey{Index: index, Name: name, Type: declared[name], Sort: k.KeyType == types.KeyTypeRange})
		}
	}
	for _, g := range t.GlobalSecondaryIndexes {
		add(aws.ToString(g.IndexName), g.KeySchema)
	}
	for _, l := range t.LocalSecondaryIndexes {
		add(aws.ToString(l.IndexName), l.KeySchema)
	}
	return keys
}

// check says what is wrong with v as a value of the key, or nil.
func (k IndexKey) check(v types.AttributeValue) error {
	limit := 2048
	what := "partition"
	if k.Sort {
		limit, what = 1024, "sort"
	}
	size, typ := 0, ddbjson.TypeName(v)
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		size = len(v.Value)
	case *types.AttributeValueMemberB:
		size = len(v.Value)
	}
	switch {
	case typ != string(k.Type):
		return fmt.Errorf("attribute %q is the %s key of the table's index %s, of type %s; this value is %s (fix the values, or load into a table without that index)", k.Name, what, k.Index, k.Type, typ)
	case typ != "N" && size == 0:
		return fmt.Errorf("attribute %q is the %s key of the table's index %s; DynamoDB refuses an empty %s there (leave the attribute out instead)", k.Name, what, k.Index, typ)
	case size > limit:
		return fmt.Errorf("attribute %q is the %s key of the table's index %s: %d bytes, over DynamoDB's %d", k.Name, what, k.Index, size, limit)
	}
	return nil
}

// CheckIndexKeys reads the items once more, without writing, and returns a
// located problem for each node whose value of one of keys DynamoDB would
// refuse (at most max of them; 0 means no bound). A node's problems are
// reported once, at its record.
func CheckIndexKeys(ctx context.Context, in *Input, opts EmitOptions, keys []IndexKey, max int) ([]*transform.RowError, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	opts.Skip, opts.Rejects = 0, nil
	check := NewIndexKeyCheck(keys, opts.Layout, in.Forest, "", max)
	_, err := in.Emit(ctx, opts, func(_ int64, item layouts.Item) error {
		if check.Add(item) {
			return errEnough
		}
		return nil
	})
	if err != nil && err != errEnough {
		return nil, err
	}
	return check.Problems, nil
}

// IndexKeyCheck checks items one at a time against the keys of a table's
// own indexes (TableIndexKeys), as CheckIndexKeys checks an input: the
// writes of a plan or an edit are checked before the first of them goes.
type IndexKeyCheck struct {
	// Problems are the items DynamoDB would refuse, a node's once.
	Problems []*transform.RowError
	keys     []IndexKey
	l        layouts.Layout
	forest   *transform.Forest
	file     string
	max      int
	seen     map[string]bool
}

// NewIndexKeyCheck checks the items of layout l against keys, keeping at
// most max problems (0: no bound). A problem is located at its node's
// record in forest when forest has it, else in file (may be "").
func NewIndexKeyCheck(keys []IndexKey, l layouts.Layout, forest *transform.Forest, file string, max int) *IndexKeyCheck {
	return &IndexKeyCheck{keys: keys, l: l, forest: forest, file: file, max: max, seen: map[string]bool{}}
}

// Add checks one item, and reports whether the check holds all the
// problems it may.
func (c *IndexKeyCheck) Add(item layouts.Item) (full bool) {
	for _, k := range c.keys {
		v, ok := item[k.Name]
		if !ok {
			continue // not in the index
		}
		err := k.check(v)
		if err == nil {
			continue
		}
		id := c.l.Owner(layouts.MapView(item))
		if c.seen[id+"\x00"+k.Name] {
			continue
		}
		c.seen[id+"\x00"+k.Name] = true
		p := &transform.RowError{File: c.file, ID: id, Err: err}
		if c.forest != nil {
			if i := c.forest.Lookup(id); i >= 0 {
				p.File, p.Line, p.Unit = c.forest.Location(i)
			}
		}
		c.Problems = append(c.Problems, p)
		if c.max > 0 && len(c.Problems) >= c.max {
			return true
		}
	}
	return false
}

// Err is an *IndexKeyError of table when the check found problems, else
// nil.
func (c *IndexKeyCheck) Err(table string) error {
	if len(c.Problems) == 0 {
		return nil
	}
	return &IndexKeyError{Table: table, Problems: c.Problems}
}

var errEnough = errors.New("enough problems")

// IndexKeyError lists the items whose values for the keys of a table's own
// indexes DynamoDB would refuse. It matches ErrInvalid: nothing was written.
type IndexKeyError struct {
	Table    string
	Problems []*transform.RowError
}

func (e *IndexKeyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "importer: table %s has indexes of its own whose keys refuse %d of the values to be written (the first 100 at most); nothing was written:", e.Table, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Is makes an IndexKeyError match ErrInvalid.
func (e *IndexKeyError) Is(target error) bool { return target == ErrInvalid }
