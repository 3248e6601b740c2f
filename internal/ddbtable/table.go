package ddbtable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
)

// Billing is how a new table pays for its capacity, and how it starts. The
// zero value is on-demand (PAY_PER_REQUEST), with DynamoDB's defaults.
type Billing struct {
	// Provisioned selects provisioned capacity: RCU and WCU for the table
	// and the same for each of its indexes.
	Provisioned bool
	RCU, WCU    int64
	// WarmRCU and WarmWCU, when above 0, are the table's WarmThroughput
	// (read and write units a second it serves at once, without scaling
	// first), and each index's: an index takes the table's writes.
	WarmRCU, WarmWCU int64
	// MaxOnDemandRCU and MaxOnDemandWCU, when above 0, are the
	// OnDemandThroughput ceilings of the table and of each index (request
	// units a second, beyond which DynamoDB throttles): a cap on spend.
	// On-demand billing only.
	MaxOnDemandRCU, MaxOnDemandWCU int64
}

// A new table starts warm at these rates (DynamoDB's default warm
// throughput); a lower WarmThroughput warms nothing.
const (
	DefaultWarmRCU = 12000
	DefaultWarmWCU = 4000
)

// Check reports what is wrong with b: provisioned capacity without both
// units, on-demand ceilings with provisioned capacity or below 1, a warm
// throughput below DynamoDB's default.
func (b Billing) Check() error {
	var probs []string
	if b.Provisioned && (b.RCU <= 0 || b.WCU <= 0) {
		probs = append(probs, fmt.Sprintf("provisioned capacity needs read and write units above 0 (got %d RCU, %d WCU)", b.RCU, b.WCU))
	}
	if b.Provisioned && (b.MaxOnDemandRCU != 0 || b.MaxOnDemandWCU != 0) {
		probs = append(probs, "on-demand ceilings go with on-demand billing, not with provisioned capacity")
	}
	if b.MaxOnDemandRCU < 0 || b.MaxOnDemandWCU < 0 {
		probs = append(probs, fmt.Sprintf("on-demand ceilings must be above 0 (got %d RCU, %d WCU)", b.MaxOnDemandRCU, b.MaxOnDemandWCU))
	}
	if b.WarmRCU != 0 && b.WarmRCU < DefaultWarmRCU {
		probs = append(probs, fmt.Sprintf("warm read throughput %d is below the %d reads a second every new table starts with", b.WarmRCU, DefaultWarmRCU))
	}
	if b.WarmWCU != 0 && b.WarmWCU < DefaultWarmWCU {
		probs = append(probs, fmt.Sprintf("warm write throughput %d is below the %d writes a second every new table starts with", b.WarmWCU, DefaultWarmWCU))
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	return nil
}

// Warm reports whether b asks for a WarmThroughput.
func (b Billing) Warm() bool { return b.WarmRCU > 0 || b.WarmWCU > 0 }

// TableAPI is the part of the DynamoDB client that CreateTable uses;
// *dynamodb.Client satisfies it.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// The JSON shape of CreateTable, with the API's field names, as
// `aws dynamodb create-table --cli-input-json` reads it.
type (
	schemaDoc struct {
		TableName              string            `json:"TableName"`
		AttributeDefinitions   []schemaAttr      `json:"AttributeDefinitions"`
		KeySchema              []schemaKey       `json:"KeySchema"`
		GlobalSecondaryIndexes []schemaIndex     `json:"GlobalSecondaryIndexes,omitempty"`
		BillingMode            string            `json:"BillingMode"`
		ProvisionedThroughput  *schemaThroughput `json:"ProvisionedThroughput,omitempty"`
		OnDemandThroughput     *schemaOnDemand   `json:"OnDemandThroughput,omitempty"`
		WarmThroughput         *schemaWarm       `json:"WarmThroughput,omitempty"`
	}
	schemaAttr struct {
		AttributeName string `json:"AttributeName"`
		AttributeType string `json:"AttributeType"`
	}
	schemaKey struct {
		AttributeName string `json:"AttributeName"`
		KeyType       string `json:"KeyType"`
	}
	schemaIndex struct {
		IndexName             string            `json:"IndexName"`
		KeySchema             []schemaKey       `json:"KeySchema"`
		Projection            schemaProjection  `json:"Projection"`
		ProvisionedThroughput *schemaThroughput `json:"ProvisionedThroughput,omitempty"`
		OnDemandThroughput    *schemaOnDemand   `json:"OnDemandThroughput,omitempty"`
		WarmThroughput        *schemaWarm       `json:"WarmThroughput,omitempty"`
	}
	schemaProjection struct {
		ProjectionType   string   `json:"ProjectionType"`
		NonKeyAttributes []string `json:"NonKeyAttributes,omitempty"`
	}
	schemaThroughput struct {
		ReadCapacityUnits  int64 `json:"ReadCapacityUnits"`
		WriteCapacityUnits int64 `json:"WriteCapacityUnits"`
	}
	schemaOnDemand struct {
		MaxReadRequestUnits  int64 `json:"MaxReadRequestUnits,omitempty"`
		MaxWriteRequestUnits int64 `json:"MaxWriteRequestUnits,omitempty"`
	}
	schemaWarm struct {
		ReadUnitsPerSecond  int64 `json:"ReadUnitsPerSecond,omitempty"`
		WriteUnitsPerSecond int64 `json:"WriteUnitsPerSecond,omitempty"`
	}
)

// schema builds the CreateTable document for spec, checking that an
// attribute used by several keys has one type.
func schema(name string, spec layouts.TableSpec, billing Billing) (*schemaDoc, error) {
	if err := billing.Check(); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, errors.New("empty table name")
	}
	doc := &schemaDoc{TableName: name, BillingMode: string(types.BillingModePayPerRequest)}
	var tp *schemaThroughput
	if billing.Provisioned {
		doc.BillingMode = string(types.BillingModeProvisioned)
		tp = &schemaThroughput{ReadCapacityUnits: billing.RCU, WriteCapacityUnits: billing.WCU}
		doc.ProvisionedThroughput = tp
	}
	var od *schemaOnDemand
	if billing.MaxOnDemandRCU > 0 || billing.MaxOnDemandWCU > 0 {
		od = &schemaOnDemand{MaxReadRequestUnits: billing.MaxOnDemandRCU, MaxWriteRequestUnits: billing.MaxOnDemandWCU}
		doc.OnDemandThroughput = od
	}
	var warm *schemaWarm
	if billing.Warm() {
		warm = &schemaWarm{ReadUnitsPerSecond: billing.WarmRCU, WriteUnitsPerSecond: billing.WarmWCU}
		doc.WarmThroughput = warm
	}
	attrTypes := map[string]string{}
	var problems []string
	def := func(where string, k layouts.KeyAttr) {
		t := string(k.Type)
		if t == "" {
			problems = append(problems, fmt.Sprintf("%s: attribute %q has no type", where, k.Name))
			return
		}
		if old, ok := attrTypes[k.Name]; ok {
			if old != t {
				problems = append(problems, fmt.Sprintf("%s: attribute %q is %s here but %s in another key", where, k.Name, t, old))
			}
			return
		}
		attrTypes[k.Name] = t
		doc.AttributeDefinitions = append(doc.AttributeDefinitions, schemaAttr{AttributeName: k.Name, AttributeType: t})
	}
	keys := func(where string, pk layouts.KeyAttr, sk *layouts.KeyAttr) []schemaKey {
		def(where, pk)
		ks := []schemaKey{{AttributeName: pk.Name, KeyType: "HASH"}}
		if sk != nil {
			def(where, *sk)
			ks = append(ks, schemaKey{AttributeName: sk.Name, KeyType: "RANGE"})
		}
		return ks
	}
	doc.KeySchema = keys("table key", spec.PK, spec.SK)
	for _, ix := range spec.Indexes {
		doc.GlobalSecondaryIndexes = append(doc.GlobalSecondaryIndexes, schemaIndex{
			IndexName:             ix.Name,
			KeySchema:             keys("index "+ix.Name, ix.PK, ix.SK),
			Projection:            schemaProjection{ProjectionType: string(ProjectionOf(ix)), NonKeyAttributes: ix.NonKeyAttributes},
			ProvisionedThroughput: tp,
			OnDemandThroughput:    od,
			WarmThroughput:        warm,
		})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the layout's table is not valid: %s", strings.Join(problems, "; "))
	}
	return doc, nil
}

// SchemaJSON is the CreateTable request for the layout's table as JSON with
// the API's field names, which `aws dynamodb create-table --cli-input-json`
// accepts: TableName, AttributeDefinitions, KeySchema, GlobalSecondaryIndexes
// (every attribute projected), BillingMode and, for provisioned billing,
// ProvisionedThroughput on the table and on each index, and the
// OnDemandThroughput and WarmThroughput billing asks for, on the table and
// on each index. It ends in a newline.
func SchemaJSON(name string, spec layouts.TableSpec, billing Billing) ([]byte, error) {
	doc, err := schema(name, spec, billing)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// CreateTableInput is the SDK request SchemaJSON describes.
func CreateTableInput(name string, spec layouts.TableSpec, billing Billing) (*dynamodb.CreateTableInput, error) {
	doc, err := schema(name, spec, billing)
	if err != nil {
		return nil, err
	}
	tp := func(t *schemaThroughput) *types.ProvisionedThroughput {
		if t == nil {
			return nil
		}
		return &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(t.ReadCapacityUnits), WriteCapacityUnits: aws.Int64(t.WriteCapacityUnits)}
	}
	od := func(t *schemaOnDemand) *types.OnDemandThroughput {
		if t == nil {
			return nil
		}
		return &types.OnDemandThroughput{MaxReadRequestUnits: positive(t.MaxReadRequestUnits), MaxWriteRequestUnits: positive(t.MaxWriteRequestUnits)}
	}
	warm := func(t *schemaWarm) *types.WarmThroughput {
		if t == nil {
			return nil
		}
		return &types.WarmThroughput{ReadUnitsPerSecond: positive(t.ReadUnitsPerSecond), WriteUnitsPerSecond: positive(t.WriteUnitsPerSecond)}
	}
	ks := func(keys []schemaKey) []types.KeySchemaElement {
		out := make([]types.KeySchemaElement, len(keys))
		for i, k := range keys {
			out[i] = types.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: types.KeyType(k.KeyType)}
		}
		return out
	}
	in := &dynamodb.CreateTableInput{
		TableName:             aws.String(doc.TableName),
		KeySchema:             ks(doc.KeySchema),
		BillingMode:           types.BillingMode(doc.BillingMode),
		ProvisionedThroughput: tp(doc.ProvisionedThroughput),
		OnDemandThroughput:    od(doc.OnDemandThroughput),
		WarmThroughput:        warm(doc.WarmThroughput),
	}
	for _, a := range doc.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: types.ScalarAttributeType(a.AttributeType),
		})
	}
	for _, ix := range doc.GlobalSecondaryIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:             aws.String(ix.IndexName),
			KeySchema:             ks(ix.KeySchema),
			Projection:            &types.Projection{ProjectionType: types.ProjectionType(ix.Projection.ProjectionType), NonKeyAttributes: ix.Projection.NonKeyAttributes},
			ProvisionedThroughput: tp(ix.ProvisionedThroughput),
			OnDemandThroughput:    od(ix.OnDemandThroughput),
			WarmThroughput:        warm(ix.WarmThroughput),
		})
	}
	return in, nil
}

// positive is n as an optional API number: nil when not above 0.
func positive(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return aws.Int64(n)
}

// tableWaitPoll is the longest pause between two DescribeTable calls while
// waiting for a table; the first pauses are shorter.
var tableWaitPoll = 2 * time.Second

// CreateTable creates the layout's table and waits until it and every index
// are ACTIVE, or ctx ends. If the table already exists it waits for it and
// checks it with CheckTable instead, so that a rerun with the same flags
// goes on.
func CreateTable(ctx context.Context, client TableAPI, name string, spec layouts.TableSpec, billing Billing) error {
	in, err := CreateTableInput(name, spec, billing)
	if err != nil {
		return err
	}
	if _, err := client.CreateTable(ctx, in); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return serviceError("CreateTable", err)
		}
		if _, err := waitActive(ctx, client, name); err != nil {
			return err
		}
		return CheckTable(ctx, client, name, spec)
	}
	_, err = waitActive(ctx, client, name)
	return err
}

// waitActive polls until the table and its indexes are ACTIVE.
func waitActive(ctx context.Context, client TableAPI, name string) (*types.TableDescription, error) {
	pause := 50 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return nil, ddb.DescribeError("ddbtable", name, err)
		}
		if t := out.Table; t != nil && active(t) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for table %q to become active: %w", name, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, tableWaitPoll)
	}
}

func active(t *types.TableDescription) bool {
	if t.TableStatus != types.TableStatusActive {
		return false
	}
	for _, ix := range t.GlobalSecondaryIndexes {
		if ix.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}

func serviceError(op string, err error) error {
	e := &ddb.ServiceError{Pkg: "ddbtable", Op: op, Err: err}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		e.Code = apiErr.ErrorCode()
	}
	return e
}
