package itemdigest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// TestDiff: of 200,000 items wanted (their sorts spilled to disk in a
// 64 KiB budget) and the same held in another order but for a few
// missing, different and extra ones, Diff counts each kind and names the
// first of each; the same items held compare the same.
func TestDiff(t *testing.T) {
	const n = 200_000
	key := func(k int) []byte { return []byte(fmt.Sprintf("k%07d", k)) }
	for _, tc := range []struct {
		name                      string
		missing, different, extra map[int]bool
	}{
		{"same", nil, nil, nil},
		{"differences", map[int]bool{0: true, 77: true, n - 1: true}, map[int]bool{5: true, 1000: true}, map[int]bool{n + 3: true, -1: true, 90_001: true, 4: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDiff(t.TempDir(), 64<<10)
			defer d.Close()
			for k := range n {
				if err := d.Want(key(k), uint64(k)*7); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
				digest := uint64(k) * 7
				switch {
				case tc.missing[k]:
					continue
				case tc.different[k]:
					digest++
				}
				if err := d.Have(key(k), digest); err != nil {
					t.Fatal(err)
				}
			}
			for k := range tc.extra {
				d.Have([]byte(fmt.Sprintf("k%07d-extra", k)), 1)
			}
			if d.want.Runs() < 2 {
				t.Fatalf("%d runs: the sort did not spill", d.want.Runs())
			}
			c, err := d.Compare()
			if err != nil {
				t.Fatal(err)
			}
			if c.Wanted != n || c.Held != int64(n-len(tc.missing)+len(tc.extra)) {
				t.Errorf("wanted %d, held %d", c.Wanted, c.Held)
			}
			if c.Missing != int64(len(tc.missing)) || c.Different != int64(len(tc.different)) || c.Extra != int64(len(tc.extra)) || c.Same() != (tc.missing == nil) {
				t.Errorf("got %+v, want %d missing, %d different, %d extra", c, len(tc.missing), len(tc.different), len(tc.extra))
			}
			if tc.missing != nil && (c.MissingKeys[0] != "k0000000" || c.DifferentKeys[0] != "k0000005" || c.ExtraKeys[0] != "k-000001-extra" || len(c.ExtraKeys) != 3) {
				t.Errorf("the first keys: %q %q %q", c.MissingKeys, c.DifferentKeys, c.ExtraKeys)
			}
		})
	}
}

// TestKeysText: the keys a Diff names are written as their attributes,
// quoted when strings, and a key that does not decode as itself, quoted.
func TestKeysText(t *testing.T) {
	l, err := layouts.New("closure", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := l.Table()
	item := map[string]types.AttributeValue{spec.PK.Name: &types.AttributeValueMemberS{Value: `a"b`}, spec.SK.Name: &types.AttributeValueMemberN{Value: "3"}}
	if spec.SK == nil {
		t.Fatal("closure has no sort key")
	}
	got := KeysText(spec, []string{KeyOf(spec, item), "Zbad"})
	want := fmt.Sprintf(`%s="a\"b" %s=3, "Zbad"`, spec.PK.Name, spec.SK.Name)
	if got != want {
		t.Errorf("KeysText: %s, want %s", got, want)
	}
}
