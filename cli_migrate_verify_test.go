package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// TestMigrateOutOfCoreVerifiesContent: the out-of-core migrate into an
// empty table, sharded (copy 1 of 3) and not, verifies the destination by
// content: an item of its shard changed behind its back (one attribute
// more), deleted, or an item of its shard put that it did not write,
// between its writes and its verify (a faultproxy hook at the verify's
// first Scan), fails it (exit 1) with the item's key; the items of the
// other shards, which it does not own, are left out of the verify (a
// change to one of them passes); untouched, it verifies.
func TestMigrateOutOfCoreVerifiesContent(t *testing.T) {
	endpoint, client, env := ddbLocal(t)
	path, _ := layouts.New("path", layouts.Options{})
	src := loadTable(t, env, client, "fixtures/cars.csv", fixtureTypes(t, "cars"), path)
	prefix, _ := layouts.New("prefix", layouts.Options{})
	spec := prefix.Table()
	for _, shard := range []string{"1/3", "0/1"} {
		sh, err := ddbwrite.ParseShard(shard)
		if err != nil {
			t.Fatal(err)
		}
		for _, tamper := range []string{"none", "change", "delete", "extra", "other shard"} {
			if tamper == "other shard" && sh.Of == 1 {
				continue
			}
			t.Run(fmt.Sprintf("shard %s/%s", shard, tamper), func(t *testing.T) {
				table := ddblocal.NewTable(t, client, spec)
				var (
					mu      sync.Mutex
					wrote   bool
					done    bool
					touched string
				)
				hook := func(op string, body []byte) {
					mu.Lock()
					defer mu.Unlock()
					if !strings.Contains(string(body), `"`+table+`"`) || done {
						return
					}
					if op == "BatchWriteItem" {
						wrote = true
					}
					if op != "Scan" || !wrote {
						return
					}
					done = true
					touched = tamperWith(t, client, table, spec, sh, tamper)
				}
				proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, OnRequest: hook, Lifetime: 5 * time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(proxy.Close)
				stdout, stderr, code := run(t, awsEnv(proxy.URL()), append([]string{"migrate", "--from-table", src, "--from-layout", "path",
					"--to-table", table, "--to-layout", "prefix", "--shard", shard, "--no-progress"}, oocArgs(t.TempDir())...)...)
				if !done {
					t.Fatalf("the verify's Scan was not seen: exit %d\n%s\n%s", code, stdout, stderr)
				}
				if !strings.Contains(stdout+stderr, "out of core") {
					t.Errorf("not copied out of core:\n%s\n%s", stdout, stderr)
				}
				if tamper == "none" || tamper == "other shard" {
					if code != 0 || !strings.Contains(stdout, "verified: ") {
						t.Errorf("exit %d, want 0 and verified (%s):\n%s\n%s", code, touched, stdout, stderr)
					}
					return
				}
				if code != 1 || strings.Contains(stdout, "verified: ") || !strings.Contains(stderr, touched) {
					t.Errorf("exit %d, want 1, not verified, and the item %s named:\n%s\n%s", code, touched, stdout, stderr)
				}
			})
		}
	}
}

// tamperWith changes the destination behind the migrate's back, with a
// client of its own: an item of shard sh gets an attribute more (change),
// is deleted (delete), or an item sh owns is put (extra); or an item of
// another shard gets an attribute more (other shard). It returns the
// key of the item as the verify names it.
func tamperWith(t *testing.T, client *dynamodb.Client, table string, spec layouts.TableSpec, sh ddbwrite.Shard, tamper string) string {
	t.Helper()
	ctx := context.Background()
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) < 3 {
		t.Fatalf("the copy wrote %d items before its verify", len(out.Items))
	}
	item := out.Items[len(out.Items)/2]
	pk := item[spec.PK.Name]
	name := func(it map[string]types.AttributeValue) string {
		s := fmt.Sprintf("%s=%q", spec.PK.Name, it[spec.PK.Name].(*types.AttributeValueMemberS).Value)
		if spec.SK != nil {
			s += fmt.Sprintf(" %s=%q", spec.SK.Name, it[spec.SK.Name].(*types.AttributeValueMemberS).Value)
		}
		return s
	}
	switch tamper {
	case "none":
		return ""
	case "change":
		item["tampered"] = &types.AttributeValueMemberS{Value: "yes"}
	case "delete":
		if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			spec.PK.Name: pk, spec.SK.Name: item[spec.SK.Name]}}); err != nil {
			t.Fatal(err)
		}
		return name(item)
	case "extra", "other shard":
		// A partition key value the shard owns (extra) or does not.
		for k := 0; ; k++ {
			v := &types.AttributeValueMemberS{Value: fmt.Sprintf("tampered%d", k)}
			if sh.OwnsValue(v) == (tamper == "extra") {
				item = map[string]types.AttributeValue{spec.PK.Name: v, spec.SK.Name: &types.AttributeValueMemberS{Value: "x"}}
				break
			}
		}
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	return name(item)
}
