package ddblocal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// recorder is a testing.TB that records Skip and Fatal instead of stopping.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped, r.msg = true, fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any) { r.failed, r.msg = true, fmt.Sprint(args...) }

func TestEndpointWithoutEngine(t *testing.T) {
	tests := []struct {
		name               string
		endpoint, ci       string
		wantSkip, wantFail bool
		want               string
	}{
		{name: "set", endpoint: "http://127.0.0.1:8000", want: "http://127.0.0.1:8000"},
		{name: "unset locally", wantSkip: true},
		{name: "unset under CI", ci: "true", wantFail: true},
		{name: "CI=false is local", ci: "false", wantSkip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvEndpoint, tt.endpoint)
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			got := Endpoint(r)
			if got != tt.want || r.skipped != tt.wantSkip || r.failed != tt.wantFail {
				t.Errorf("Endpoint = %q, skipped %v, failed %v; want %q, %v, %v", got, r.skipped, r.failed, tt.want, tt.wantSkip, tt.wantFail)
			}
			if (tt.wantSkip || tt.wantFail) && !strings.Contains(r.msg, "scripts/ddblocal.sh start") {
				t.Errorf("message %q does not say how to start the engine", r.msg)
			}
		})
	}
}

func TestNewTable(t *testing.T) {
	ep := Endpoint(t)
	c := Client(t, ep)
	spec := layouts.TableSpec{
		PK: layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS},
		SK: &layouts.KeyAttr{Name: "RelativeDepth", Type: types.ScalarAttributeTypeN},
		Indexes: []layouts.IndexSpec{{
			Name: "ByAncestor",
			PK:   layouts.KeyAttr{Name: "AncestorId", Type: types.ScalarAttributeTypeS},
			SK:   &layouts.KeyAttr{Name: "RelativeDepth", Type: types.ScalarAttributeTypeN},
		}},
	}
	var name string
	t.Run("create", func(t *testing.T) {
		name = NewTable(t, c, spec)
		out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Table.TableStatus != types.TableStatusActive || len(out.Table.GlobalSecondaryIndexes) != 1 ||
			len(out.Table.KeySchema) != 2 || len(out.Table.AttributeDefinitions) != 3 {
			t.Errorf("table %+v", out.Table)
		}
		if other := NewTable(t, c, spec); other == name {
			t.Errorf("two tables named %s", name)
		}
	})
	// The subtest's cleanup deleted it.
	_, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("after the test, DescribeTable = %v, want ResourceNotFoundException", err)
	}
}
