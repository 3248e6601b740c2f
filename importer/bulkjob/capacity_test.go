package bulkjob

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/layouts"
)

// The warm throughput and on-demand ceilings a new table asks for go,
// through the SDK's own validation and serialization, onto the table and
// every index, and the request sent is the JSON `schema` prints.
func TestCreateTableCapacityMatchesTheAPI(t *testing.T) {
	tests := []struct {
		name    string
		billing ddbtable.Billing
		warm    *types.WarmThroughput
		ceiling *types.OnDemandThroughput
	}{
		{name: "warm writes", billing: ddbtable.Billing{WarmWCU: 40000},
			warm: &types.WarmThroughput{WriteUnitsPerSecond: aws.Int64(40000)}},
		{name: "warm both, capped both", billing: ddbtable.Billing{WarmWCU: 5000, WarmRCU: 20000, MaxOnDemandWCU: 9000, MaxOnDemandRCU: 100000},
			warm:    &types.WarmThroughput{WriteUnitsPerSecond: aws.Int64(5000), ReadUnitsPerSecond: aws.Int64(20000)},
			ceiling: &types.OnDemandThroughput{MaxWriteRequestUnits: aws.Int64(9000), MaxReadRequestUnits: aws.Int64(100000)}},
		{name: "capped writes", billing: ddbtable.Billing{MaxOnDemandWCU: 500},
			ceiling: &types.OnDemandThroughput{MaxWriteRequestUnits: aws.Int64(500)}},
		{name: "provisioned and warm", billing: ddbtable.Billing{Provisioned: true, WCU: 10, RCU: 10, WarmWCU: 4000},
			warm: &types.WarmThroughput{WriteUnitsPerSecond: aws.Int64(4000)}},
	}
	l, _ := layouts.New(layouts.PathName, layouts.Options{})
	spec := l.Table()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ddbtable.CreateTableInput("Tree", spec, tc.billing)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in.WarmThroughput, tc.warm) || !reflect.DeepEqual(in.OnDemandThroughput, tc.ceiling) {
				t.Errorf("table: warm %+v ceiling %+v", in.WarmThroughput, in.OnDemandThroughput)
			}
			for _, ix := range in.GlobalSecondaryIndexes {
				if !reflect.DeepEqual(ix.WarmThroughput, tc.warm) || !reflect.DeepEqual(ix.OnDemandThroughput, tc.ceiling) {
					t.Errorf("index %s: warm %+v ceiling %+v", aws.ToString(ix.IndexName), ix.WarmThroughput, ix.OnDemandThroughput)
				}
			}
			h := &recordingHTTP{status: http.StatusOK, answer: `{"TableDescription":{"TableName":"Tree","TableStatus":"ACTIVE"}}`}
			if _, err := fakeDynamoDB(h).CreateTable(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			var sent, want map[string]any
			if err := json.Unmarshal(h.bodies[0], &sent); err != nil {
				t.Fatal(err)
			}
			doc, err := ddbtable.SchemaJSON("Tree", spec, tc.billing)
			if err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal(doc, &want)
			if !reflect.DeepEqual(sent, want) {
				t.Errorf("the SDK sent\n%s\nschema prints\n%s", h.bodies[0], doc)
			}
		})
	}
}

// ImportTable takes the on-demand ceilings (TableCreationParameters has
// OnDemandThroughput) but no warm throughput: ImportTableInput refuses one,
// and import-table.json leaves it out while create-table.json keeps it.
func TestImportTableCapacity(t *testing.T) {
	l, _ := layouts.New(layouts.PathName, layouts.Options{})
	spec := l.Table()
	capped := ddbtable.Billing{MaxOnDemandWCU: 9000}
	in, err := ImportTableInput("Tree", spec, capped, "b-1", "p/data/", "tok")
	if err != nil {
		t.Fatal(err)
	}
	h := &recordingHTTP{status: http.StatusOK, answer: `{"ImportTableDescription":{"ImportArn":"arn:aws:dynamodb:us-east-1:1:table/Tree/import/1","ImportStatus":"IN_PROGRESS"}}`}
	if _, err := StartImport(context.Background(), fakeDynamoDB(h), in); err != nil {
		t.Fatal(err)
	}
	var sent, want map[string]any
	_ = json.Unmarshal(h.bodies[0], &sent)
	delete(sent, "ClientToken")
	file, err := ImportTableJSON("Tree", spec, capped, "b-1", "p/data/")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(file, &want)
	if !reflect.DeepEqual(sent, want) {
		t.Errorf("the SDK sent\n%s\nimport-table.json holds\n%s", h.bodies[0], file)
	}
	params := sent["TableCreationParameters"].(map[string]any)
	if od, _ := params["OnDemandThroughput"].(map[string]any); od["MaxWriteRequestUnits"] != 9000.0 {
		t.Errorf("TableCreationParameters: %v", params)
	}

	warm := ddbtable.Billing{WarmWCU: 8000, MaxOnDemandWCU: 9000}
	if _, err := ImportTableInput("Tree", spec, warm, "b-1", "p/data/", ""); err == nil || !strings.Contains(err.Error(), "no WarmThroughput") {
		t.Errorf("ImportTableInput with a warm throughput: %v", err)
	}
	file, err = ImportTableJSON("Tree", spec, warm, "b-1", "p/data/")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(file), "WarmThroughput") || !strings.Contains(string(file), "MaxWriteRequestUnits") {
		t.Errorf("import-table.json:\n%s", file)
	}
	create, _ := ddbtable.SchemaJSON("Tree", spec, warm)
	if !strings.Contains(string(create), `"WriteUnitsPerSecond": 8000`) {
		t.Errorf("create-table.json:\n%s", create)
	}
	in.TableCreationParameters.BillingMode = types.BillingModeProvisioned
	in.TableCreationParameters.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}
	if err := ValidateImportTableInput(in); err == nil || !strings.Contains(err.Error(), "OnDemandThroughput goes with PAY_PER_REQUEST") {
		t.Errorf("provisioned with ceilings: %v", err)
	}
}
