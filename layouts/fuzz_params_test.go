package layouts_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
)

// FuzzShippedModelParamsNode loads the shipped models that take a
// parameter (electrodb-employees' org, s3-inventory's bucket) and
// store-locations with a parameter value the fuzzer gives (#, ¦, /, {,
// empty...), and feeds their Node decoder items whose attributes hold
// arbitrary text: loading may refuse the value, but nothing may panic, an
// error must wrap ErrItem (an item always holds the table's key), Node, IsNode, NodeOf and Owner must agree, and
// an item read as a node must be the bound tenant's: its rows, rendered
// again from the record, have the item's own table key.
func FuzzShippedModelParamsNode(f *testing.F) {
	files := []string{"electrodb-employees", "s3-inventory", "store-locations"}
	data := make([][]byte, len(files))
	for i, name := range files {
		b, err := os.ReadFile("../fixtures/models/" + name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		data[i] = b
	}
	f.Add(uint8(0), "acme", "$hr#orgid_acme\x00$employee_1#employeeid_e42\x00$hr#orgid_acme#managerid_e7\x00$employee_1#employeeid_e42\x00e42\x00e7\x00acme\x001\x00employee", uint8(0))
	f.Add(uint8(0), "acme", "$hr#orgid_acme2\x00$employee_1#employeeid_e42\x00$hr#orgid_acme2#managerid_e7\x00$employee_1#employeeid_e42\x00e42\x00e7\x00acme2\x001\x00employee", uint8(0))
	f.Add(uint8(0), "ac#me", "$hr#orgid_ac#me\x00$employee_1#employeeid_e1\x00\x00\x00e1\x00\x00ac#me\x001\x00employee", uint8(12))
	f.Add(uint8(1), "b", "b\x00photos/2024/trip/img1.jpg", uint8(0))
	f.Add(uint8(1), "b/", "b/\x00photos/", uint8(0))
	f.Add(uint8(1), "b", "b\x00a//b", uint8(0))
	f.Add(uint8(1), "{id}", "{id}\x00x", uint8(0))
	f.Add(uint8(2), "", "1001\x00USA\x00WA#SEATTLE#98101", uint8(0))
	f.Add(uint8(2), "", "1001\x00USA\x00WA##98101", uint8(0))
	f.Fuzz(func(t *testing.T, pick uint8, param, text string, mask uint8) {
		i := int(pick) % len(files)
		params := map[string]string{"org": param, "bucket": param}
		if i == 2 {
			params = nil
		} else if i == 0 {
			delete(params, "bucket")
		} else {
			delete(params, "org")
		}
		l, err := models.ParseModelParams(files[i]+".json", data[i], params)
		if err != nil {
			return // a value the model refuses when it is loaded
		}
		parts := strings.Split(text, "\x00")
		item := layouts.Item{}
		for k, name := range l.Reserved() {
			if k >= len(parts) || k >= len(l.Table().KeyNames()) && mask&(1<<(k%8)) != 0 {
				continue
			}
			item[name] = &types.AttributeValueMemberS{Value: parts[k]}
		}
		before := layoutstest.DDBJSON(item)
		rec, ok, err := l.Node(item)
		if layoutstest.DDBJSON(item) != before {
			t.Fatalf("Node changed the item: %s, was %s", layoutstest.DDBJSON(item), before)
		}
		if err != nil {
			if !errors.Is(err, layouts.ErrItem) {
				t.Fatalf("Node(%s): %v, not an ErrItem", before, err)
			}
			return
		}
		view := layouts.MapView(item)
		id, parent, nodeOK := l.NodeOf(view)
		if ok != l.IsNode(view) || ok != nodeOK {
			t.Fatalf("Node(%s) says %v, IsNode %v, NodeOf %v", before, ok, l.IsNode(view), nodeOK)
		}
		if !ok {
			return
		}
		if rec.ID != id || rec.Parent != parent || l.Owner(view) != id {
			t.Fatalf("Node(%s) = %q<%q, NodeOf %q<%q, Owner %q", before, rec.ID, rec.Parent, id, parent, l.Owner(view))
		}
		if models.Foreign(l, view) {
			t.Fatalf("Node(%s) read a foreign item as node %q", before, id)
		}
	})
}
