package ddbtable

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
)

// WorkbenchOptions say what a NoSQL Workbench data model holds.
type WorkbenchOptions struct {
	// Table is the table's name in the model; Layout its keys and indexes.
	Table  string
	Layout layouts.Layout
	// Items are the sample items of TableData (nil: none).
	Items []layouts.Item
	// Now dates the model (ModelMetadata's DateCreated and
	// DateLastModified).
	Now time.Time
}

type (
	wbModel struct {
		ModelName     string     `json:"ModelName"`
		ModelMetadata wbMetadata `json:"ModelMetadata"`
		DataModel     []wbTable  `json:"DataModel"`
	}
	wbMetadata struct {
		Author           string `json:"Author"`
		DateCreated      string `json:"DateCreated"`
		DateLastModified string `json:"DateLastModified"`
		Description      string `json:"Description"`
		AWSService       string `json:"AWSService"`
		Version          string `json:"Version"`
	}
	wbTable struct {
		TableName              string            `json:"TableName"`
		KeyAttributes          wbKeys            `json:"KeyAttributes"`
		NonKeyAttributes       []wbAttr          `json:"NonKeyAttributes"`
		GlobalSecondaryIndexes []wbIndex         `json:"GlobalSecondaryIndexes,omitempty"`
		TableData              []json.RawMessage `json:"TableData"`
		DataAccess             map[string]any    `json:"DataAccess"`
		BillingMode            string            `json:"BillingMode"`
	}
	wbKeys struct {
		PartitionKey wbAttr  `json:"PartitionKey"`
		SortKey      *wbAttr `json:"SortKey,omitempty"`
	}
	wbAttr struct {
		AttributeName string `json:"AttributeName"`
		AttributeType string `json:"AttributeType"`
	}
	wbIndex struct {
		IndexName     string           `json:"IndexName"`
		KeyAttributes wbKeys           `json:"KeyAttributes"`
		Projection    schemaProjection `json:"Projection"`
	}
)

// Workbench writes a NoSQL Workbench data model (the "Version 3.0" JSON
// Workbench exports and imports): ModelName, ModelMetadata, and one table in
// DataModel with its KeyAttributes, every other attribute of the sample
// items and of the index keys in NonKeyAttributes (with the type of its
// first value), GlobalSecondaryIndexes with their projections, and the
// sample items in TableData as DynamoDB JSON.
func Workbench(opts WorkbenchOptions) ([]byte, error) {
	spec := opts.Layout.Table()
	key := func(k layouts.KeyAttr) wbAttr { return wbAttr{AttributeName: k.Name, AttributeType: string(k.Type)} }
	keys := func(pk layouts.KeyAttr, sk *layouts.KeyAttr) wbKeys {
		ks := wbKeys{PartitionKey: key(pk)}
		if sk != nil {
			a := key(*sk)
			ks.SortKey = &a
		}
		return ks
	}
	t := wbTable{
		TableName: opts.Table, KeyAttributes: keys(spec.PK, spec.SK),
		NonKeyAttributes: []wbAttr{}, TableData: []json.RawMessage{},
		DataAccess: map[string]any{"MySql": map[string]any{}}, BillingMode: "PAY_PER_REQUEST",
	}
	declared := map[string]bool{spec.PK.Name: true}
	if spec.SK != nil {
		declared[spec.SK.Name] = true
	}
	declare := func(name, typ string) {
		if !declared[name] {
			declared[name] = true
			t.NonKeyAttributes = append(t.NonKeyAttributes, wbAttr{AttributeName: name, AttributeType: typ})
		}
	}
	for _, ix := range spec.Indexes {
		t.GlobalSecondaryIndexes = append(t.GlobalSecondaryIndexes, wbIndex{
			IndexName: ix.Name, KeyAttributes: keys(ix.PK, ix.SK),
			Projection: schemaProjection{ProjectionType: string(ProjectionOf(ix)), NonKeyAttributes: ix.NonKeyAttributes},
		})
		declare(ix.PK.Name, string(ix.PK.Type))
		if ix.SK != nil {
			declare(ix.SK.Name, string(ix.SK.Type))
		}
	}
	for _, it := range opts.Items {
		for _, name := range sortedNames(it) {
			declare(name, typeOf(it[name]))
		}
		t.TableData = append(t.TableData, json.RawMessage(ddbjson.AppendItem(nil, it)))
	}
	stamp := opts.Now.UTC().Format("Jan 02, 2006, 03:04 PM")
	m := wbModel{
		ModelName: opts.Table,
		ModelMetadata: wbMetadata{
			Author: "treeport", DateCreated: stamp, DateLastModified: stamp,
			Description: fmt.Sprintf("The %s layout of treeport, with %d sample items.", opts.Layout.Name(), len(opts.Items)),
			AWSService:  "Amazon DynamoDB", Version: "3.0",
		},
		DataModel: []wbTable{t},
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func sortedNames(it layouts.Item) []string {
	names := make([]string, 0, len(it))
	for k := range it {
		names = append(names, k)
	}
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	return names
}

// CloudFormation writes the layout's table as a CloudFormation template
// with one AWS::DynamoDB::Table resource, whose properties are those of
// the CreateTable request SchemaJSON writes.
func CloudFormation(name string, spec layouts.TableSpec, billing Billing) ([]byte, error) {
	doc, err := schema(name, spec, billing)
	if err != nil {
		return nil, err
	}
	logical := "Table"
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		logical += strings.ToUpper(part[:1]) + part[1:]
	}
	tmpl := map[string]any{
		"AWSTemplateFormatVersion": "2010-09-09",
		"Description":              "DynamoDB table " + name + ", written by treeport schema --format cloudformation",
		"Resources": map[string]any{
			logical: map[string]any{"Type": "AWS::DynamoDB::Table", "Properties": doc},
		},
	}
	b, err := json.MarshalIndent(tmpl, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// typeOf is the DynamoDB type of a value, as Workbench declares it (S for
// a value of no type DynamoDB defines).
func typeOf(v types.AttributeValue) string {
	if t := ddbjson.TypeName(v); t != "?" {
		return t
	}
	return "S"
}
