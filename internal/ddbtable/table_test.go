package ddbtable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

func keyAttr(name string, t types.ScalarAttributeType) layouts.KeyAttr {
	return layouts.KeyAttr{Name: name, Type: t}
}

// closureSpec is a table with a sort key and a numeric index sort key.
var closureSpec = layouts.TableSpec{
	PK: keyAttr("Id", types.ScalarAttributeTypeS),
	SK: &layouts.KeyAttr{Name: "RelativeDepth", Type: types.ScalarAttributeTypeN},
	Indexes: []layouts.IndexSpec{{
		Name: "ByAncestor",
		PK:   keyAttr("AncestorId", types.ScalarAttributeTypeS),
		SK:   &layouts.KeyAttr{Name: "RelativeDepth", Type: types.ScalarAttributeTypeN},
	}},
}

// pathSpec has two indexes.
var pathSpec = layouts.TableSpec{
	PK: keyAttr("Id", types.ScalarAttributeTypeS),
	Indexes: []layouts.IndexSpec{
		{Name: "ByParent", PK: keyAttr("ParentId", types.ScalarAttributeTypeS), SK: &layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS}},
		{Name: "ByPath", PK: keyAttr("TreeId", types.ScalarAttributeTypeS), SK: &layouts.KeyAttr{Name: "Path", Type: types.ScalarAttributeTypeS}},
	},
}

func TestSchemaJSONShape(t *testing.T) {
	tests := []struct {
		name    string
		billing Billing
		want    string
	}{
		{name: "on demand", want: `{
  "TableName": "tree",
  "AttributeDefinitions": [
    {
      "AttributeName": "Id",
      "AttributeType": "S"
    },
    {
      "AttributeName": "RelativeDepth",
      "AttributeType": "N"
    },
    {
      "AttributeName": "AncestorId",
      "AttributeType": "S"
    }
  ],
  "KeySchema": [
    {
      "AttributeName": "Id",
      "KeyType": "HASH"
    },
    {
      "AttributeName": "RelativeDepth",
      "KeyType": "RANGE"
    }
  ],
  "GlobalSecondaryIndexes": [
    {
      "IndexName": "ByAncestor",
      "KeySchema": [
        {
          "AttributeName": "AncestorId",
          "KeyType": "HASH"
        },
        {
          "AttributeName": "RelativeDepth",
          "KeyType": "RANGE"
        }
      ],
      "Projection": {
        "ProjectionType": "ALL"
      }
    }
  ],
  "BillingMode": "PAY_PER_REQUEST"
}
`},
		{name: "provisioned", billing: Billing{Provisioned: true, RCU: 5, WCU: 10}, want: `"ProvisionedThroughput": {
        "ReadCapacityUnits": 5,
        "WriteCapacityUnits": 10
      }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SchemaJSON("tree", closureSpec, tt.billing)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), tt.want) {
				t.Errorf("SchemaJSON:\n%s\nwant it to contain:\n%s", got, tt.want)
			}
		})
	}
}

func TestSchemaJSONRefusesBadSpecs(t *testing.T) {
	tests := []struct {
		name    string
		table   string
		spec    layouts.TableSpec
		billing Billing
		want    string
	}{
		{name: "no name", spec: pathSpec, want: "empty table name"},
		{name: "conflicting types", table: "t", spec: layouts.TableSpec{
			PK:      keyAttr("Id", types.ScalarAttributeTypeS),
			Indexes: []layouts.IndexSpec{{Name: "X", PK: keyAttr("Id", types.ScalarAttributeTypeN)}},
		}, want: `attribute "Id" is N here but S`},
		{name: "provisioned without capacity", table: "t", spec: pathSpec, billing: Billing{Provisioned: true}, want: "above 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SchemaJSON(tt.table, tt.spec, tt.billing)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// The JSON decodes into the SDK's CreateTableInput with no unknown field,
// and DynamoDB Local creates the table from it.
func TestSchemaJSONCreatesTable(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	c := ddblocal.Client(t, ep)
	tests := []struct {
		name    string
		spec    layouts.TableSpec
		billing Billing
	}{
		{name: "path on demand", spec: pathSpec},
		{name: "closure provisioned", spec: closureSpec, billing: Billing{Provisioned: true, RCU: 3, WCU: 7}},
		// DynamoDB Local takes WarmThroughput and OnDemandThroughput and
		// ignores them (its DescribeTable leaves them out): this checks the
		// names and shapes, not the effect.
		{name: "path on demand, warm, with ceilings", spec: pathSpec,
			billing: Billing{WarmWCU: 8000, WarmRCU: 15000, MaxOnDemandWCU: 20000, MaxOnDemandRCU: 30000}},
		{name: "closure provisioned, warm", spec: closureSpec, billing: Billing{Provisioned: true, RCU: 3, WCU: 7, WarmWCU: 4000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := ddblocal.TableName(t)
			data, err := SchemaJSON(name, tt.spec, tt.billing)
			if err != nil {
				t.Fatal(err)
			}
			var in dynamodb.CreateTableInput
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				t.Fatalf("decoding into CreateTableInput: %v\n%s", err, data)
			}
			ctx := context.Background()
			if _, err := c.CreateTable(ctx, &in); err != nil {
				t.Fatalf("CreateTable from the JSON: %v", err)
			}
			t.Cleanup(func() { c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
			if _, err := waitActive(ctx, c, name); err != nil {
				t.Fatal(err)
			}
			if err := CheckTable(ctx, c, name, tt.spec); err != nil {
				t.Errorf("CheckTable on the table the JSON made: %v", err)
			}
			out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.billing.Provisioned {
				if got := aws.ToInt64(out.Table.ProvisionedThroughput.WriteCapacityUnits); got != tt.billing.WCU {
					t.Errorf("table WCU %d, want %d", got, tt.billing.WCU)
				}
				for _, ix := range out.Table.GlobalSecondaryIndexes {
					if got := aws.ToInt64(ix.ProvisionedThroughput.ReadCapacityUnits); got != tt.billing.RCU {
						t.Errorf("index %s RCU %d, want %d", aws.ToString(ix.IndexName), got, tt.billing.RCU)
					}
				}
			}
		})
	}
}

func TestCreateTable(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	c := ddblocal.Client(t, ep)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := ddblocal.TableName(t)
	if err := CreateTable(ctx, c, name, pathSpec, Billing{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if !active(out.Table) {
		t.Errorf("CreateTable returned before the table and its indexes were active: %+v", out.Table)
	}
	// Again, as a rerun with --create-table does: the table is checked.
	if err := CreateTable(ctx, c, name, pathSpec, Billing{}); err != nil {
		t.Errorf("second CreateTable of a matching table: %v", err)
	}
	if err := CreateTable(ctx, c, name, closureSpec, Billing{}); !errors.Is(err, ErrSchemaMismatch) {
		t.Errorf("CreateTable over a table of another layout: %v, want ErrSchemaMismatch", err)
	}
}

// CheckTable refuses a table whose keys or indexes differ, listing every
// difference, and nothing has to be written to find out.
func TestCheckTable(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	c := ddblocal.Client(t, ep)
	ctx := context.Background()
	pathTable := ddblocal.NewTable(t, c, pathSpec)

	renamed := pathSpec
	renamed.Indexes = []layouts.IndexSpec{pathSpec.Indexes[0], {Name: "GSI2", PK: pathSpec.Indexes[1].PK, SK: pathSpec.Indexes[1].SK}}
	numeric := pathSpec
	numeric.PK = keyAttr("Id", types.ScalarAttributeTypeN)
	tests := []struct {
		name  string
		table string
		spec  layouts.TableSpec
		want  []string // each must be one of the listed differences
	}{
		{name: "same", table: pathTable, spec: pathSpec},
		{name: "other layout", table: pathTable, spec: closureSpec, want: []string{
			"sort key: table has none, layout wants RelativeDepth (N)",
			"index ByAncestor: missing",
		}},
		{name: "key type", table: pathTable, spec: numeric, want: []string{
			"partition key: table has Id (S), layout wants Id (N)",
		}},
		{name: "index renamed", table: pathTable, spec: renamed, want: []string{"index GSI2: missing"}},
		{name: "fewer indexes is fine", table: pathTable, spec: layouts.TableSpec{PK: pathSpec.PK, Indexes: pathSpec.Indexes[:1]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTable(ctx, c, tt.table, tt.spec)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("CheckTable: %v", err)
				}
				return
			}
			var mm *SchemaMismatchError
			if !errors.As(err, &mm) || !errors.Is(err, ErrSchemaMismatch) {
				t.Fatalf("CheckTable = %v, want a *SchemaMismatchError", err)
			}
			if len(mm.Diffs) != len(tt.want) {
				t.Errorf("differences %q, want %d", mm.Diffs, len(tt.want))
			}
			for _, w := range tt.want {
				found := false
				for _, d := range mm.Diffs {
					found = found || strings.HasPrefix(d, w)
				}
				if !found {
					t.Errorf("differences %q lack %q", mm.Diffs, w)
				}
			}
			if !strings.Contains(err.Error(), "--attr") {
				t.Errorf("message %q does not say what to do", err)
			}
		})
	}
	if err := CheckTable(ctx, c, "no-such-table-"+pathTable, pathSpec); !errors.Is(err, ddb.ErrTableNotFound) {
		t.Errorf("CheckTable of a missing table = %v, want ddb.ErrTableNotFound", err)
	}
}

func TestBillingCheck(t *testing.T) {
	tests := []struct {
		billing Billing
		want    string
	}{
		{Billing{Provisioned: true, WCU: 5, RCU: 5, MaxOnDemandWCU: 10}, "on-demand ceilings go with on-demand billing"},
		{Billing{WarmWCU: 1000}, "warm write throughput 1000 is below the 4000"},
		{Billing{WarmRCU: 11999}, "warm read throughput 11999 is below the 12000"},
		{Billing{MaxOnDemandRCU: -1}, "must be above 0"},
		{Billing{Provisioned: true, WCU: 5}, "needs read and write units above 0"},
	}
	for _, tc := range tests {
		err := tc.billing.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.billing, err, tc.want)
		}
		if _, err := CreateTableInput("Tree", pathSpec, tc.billing); err == nil {
			t.Errorf("%+v: CreateTableInput made a request", tc.billing)
		}
	}
	if err := (Billing{WarmWCU: 4000, WarmRCU: 12000, MaxOnDemandWCU: 1, MaxOnDemandRCU: 1}).Check(); err != nil {
		t.Errorf("the least values: %v", err)
	}
}
