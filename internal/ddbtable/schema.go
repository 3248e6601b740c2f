package ddbtable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
)

// ErrSchemaMismatch marks a table whose keys or indexes are not the
// layout's (or the model's); the error is a *SchemaMismatchError. Nothing
// was read or written.
var ErrSchemaMismatch = errors.New("ddbtable: table does not match the layout")

// SchemaMismatchError lists every way a table differs from a layout.
type SchemaMismatchError struct {
	Table string
	Diffs []string
}

func (e *SchemaMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table %q does not match the layout:", e.Table)
	for _, d := range e.Diffs {
		b.WriteString("\n  - ")
		b.WriteString(d)
	}
	b.WriteString("\nnothing was read or written: choose another table, layout or model, rename the layout's attributes and indexes with --attr OLD=NEW, or fix the model's names in its file")
	return b.String()
}

// Is makes errors.Is(err, ErrSchemaMismatch) true.
func (e *SchemaMismatchError) Is(target error) bool { return target == ErrSchemaMismatch }

// CheckTable compares the table's key schema, attribute types and indexes
// with spec's, before anything is read or written: every command that
// reads or writes a table of a layout or model calls it first. A table that differs gives a
// *SchemaMismatchError listing every difference; indexes the layout does not
// use are allowed. A missing table gives an error matching
// ddb.ErrTableNotFound.
func CheckTable(ctx context.Context, client ddb.DescribeAPI, name string, spec layouts.TableSpec) error {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return ddb.DescribeError("ddbtable", name, err)
	}
	if out.Table == nil {
		return &ddb.ServiceError{Pkg: "ddbtable", Op: "DescribeTable", Err: fmt.Errorf("no description of table %q", name)}
	}
	if diffs := schemaDiffs(out.Table, spec); len(diffs) > 0 {
		return &SchemaMismatchError{Table: name, Diffs: diffs}
	}
	return nil
}

// schemaDiffs lists how t differs from spec, in words a user can act on.
func schemaDiffs(t *types.TableDescription, spec layouts.TableSpec) []string {
	attrType := map[string]string{}
	for _, a := range t.AttributeDefinitions {
		attrType[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	describe := func(name string) string {
		if ty := attrType[name]; ty != "" {
			return fmt.Sprintf("%s (%s)", name, ty)
		}
		return name
	}
	var diffs []string
	compare := func(where string, ks []types.KeySchemaElement, pk layouts.KeyAttr, sk *layouts.KeyAttr) {
		hash, rng := keyNames(ks)
		want := func(k layouts.KeyAttr) string { return fmt.Sprintf("%s (%s)", k.Name, k.Type) }
		if hash != pk.Name || attrType[hash] != string(pk.Type) {
			diffs = append(diffs, fmt.Sprintf("%spartition key: table has %s, layout wants %s", where, describe(hash), want(pk)))
		}
		switch {
		case sk == nil && rng != "":
			diffs = append(diffs, fmt.Sprintf("%ssort key: table has %s, layout wants none", where, describe(rng)))
		case sk != nil && rng == "":
			diffs = append(diffs, fmt.Sprintf("%ssort key: table has none, layout wants %s", where, want(*sk)))
		case sk != nil && (rng != sk.Name || attrType[rng] != string(sk.Type)):
			diffs = append(diffs, fmt.Sprintf("%ssort key: table has %s, layout wants %s", where, describe(rng), want(*sk)))
		}
	}
	compare("", t.KeySchema, spec.PK, spec.SK)
	indexes := map[string]types.GlobalSecondaryIndexDescription{}
	for _, ix := range t.GlobalSecondaryIndexes {
		indexes[aws.ToString(ix.IndexName)] = ix
		if sign := signOf(ix.KeySchema, attrType, spec.Signs); sign != nil {
			diffs = append(diffs, fmt.Sprintf("index %s (%s, %s) is the %s layout's: this is a %s table, whose items hold %s; read as this layout, those would be taken for your own attributes (and plan or apply would remove them). Use --layout %s",
				aws.ToString(ix.IndexName), sign.PK.Name, sign.SK.Name, sign.Layout, sign.Layout, strings.Join(sign.Attrs, ", "), sign.Layout))
		}
	}
	for _, want := range spec.Indexes {
		ix, ok := indexes[want.Name]
		if !ok {
			keys := fmt.Sprintf("partition %s (%s)", want.PK.Name, want.PK.Type)
			if want.SK != nil {
				keys += fmt.Sprintf(", sort %s (%s)", want.SK.Name, want.SK.Type)
			}
			proj := "all attributes projected"
			if p := ProjectionOf(want); p != types.ProjectionTypeAll {
				proj = "projection " + string(p)
				if len(want.NonKeyAttributes) > 0 {
					proj += " " + strings.Join(want.NonKeyAttributes, ",")
				}
			}
			diffs = append(diffs, fmt.Sprintf("index %s: missing (layout wants a global secondary index with %s, %s)", want.Name, keys, proj))
			continue
		}
		compare("index "+want.Name+": ", ix.KeySchema, want.PK, want.SK)
		wantProj := ProjectionOf(want)
		switch {
		case ix.Projection == nil || ix.Projection.ProjectionType != wantProj:
			got := "nothing"
			if ix.Projection != nil {
				got = string(ix.Projection.ProjectionType)
			}
			diffs = append(diffs, fmt.Sprintf("index %s: projects %s, layout needs %s", want.Name, got, wantProj))
		case wantProj == types.ProjectionTypeInclude && !sameNames(ix.Projection.NonKeyAttributes, want.NonKeyAttributes):
			diffs = append(diffs, fmt.Sprintf("index %s: projects INCLUDE %s, layout needs INCLUDE %s", want.Name,
				strings.Join(ix.Projection.NonKeyAttributes, ","), strings.Join(want.NonKeyAttributes, ",")))
		}
	}
	return diffs
}

// signOf is the sign among signs whose keys (names and types) are ks's.
func signOf(ks []types.KeySchemaElement, attrType map[string]string, signs []layouts.Sign) *layouts.Sign {
	hash, rng := keyNames(ks)
	for i, s := range signs {
		if hash == s.PK.Name && rng == s.SK.Name && attrType[hash] == string(s.PK.Type) && attrType[rng] == string(s.SK.Type) {
			return &signs[i]
		}
	}
	return nil
}

// keyNames are the partition and sort key names of a key schema ("" for
// none).
func keyNames(ks []types.KeySchemaElement) (hash, rng string) {
	for _, k := range ks {
		switch k.KeyType {
		case types.KeyTypeHash:
			hash = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			rng = aws.ToString(k.AttributeName)
		}
	}
	return hash, rng
}

// ProjectionOf is an index's projection: ALL unless a model says otherwise.
func ProjectionOf(ix layouts.IndexSpec) types.ProjectionType {
	if ix.Projection == "" {
		return types.ProjectionTypeAll
	}
	return ix.Projection
}

// sameNames reports whether a and b hold the same names, in any order.
func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
