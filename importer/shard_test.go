package importer

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/ddbitems"
)

// writeForest writes a random forest of n nodes as CSV, children often
// before their parents, with a string and a typed number attribute.
func writeForest(t testing.TB, dir string, n int, seed int64) string {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	var sb strings.Builder
	sb.WriteString("id,parent_id,name,size\n")
	order := rng.Perm(n)
	for _, i := range order {
		parent := ""
		if i > 0 && rng.Intn(8) != 0 {
			parent = fmt.Sprintf("n%d", rng.Intn(i))
		}
		fmt.Fprintf(&sb, "n%d,%s,node %d %s,%d\n", i, parent, i, strings.Repeat("x", rng.Intn(40)), rng.Intn(1e6))
	}
	path := filepath.Join(dir, "forest.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readForest(t testing.TB, path string) *Input {
	t.Helper()
	types, err := records.ParseTypes("size:N")
	if err != nil {
		t.Fatal(err)
	}
	in, err := ReadInput(context.Background(), InputOptions{Path: path, Source: records.SourceOptions{Types: types}})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// readItems reads the items of an import-file directory, keyed by their
// primary key, as DynamoDB JSON. A key seen twice fails the test.
func readItems(t *testing.T, dir string, spec layouts.TableSpec) map[string]string {
	t.Helper()
	src, err := ddbitems.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	items := map[string]string{}
	for {
		item, file, line, err := src.Next(context.Background())
		if err == io.EOF {
			return items
		}
		if err != nil {
			t.Fatal(err)
		}
		k := layouts.KeyOf(spec, item)
		if _, dup := items[k]; dup {
			t.Fatalf("%s:%d: key %s is in %s twice", file, line, k, dir)
		}
		items[k] = string(ddbjson.AppendItem(nil, item))
	}
}

// For N = 1 to 4 and every layout, the shards' import files together hold
// exactly the unsharded run's items, each in one shard only, the one its
// partition key hashes to.
func TestShardsUnionFileSink(t *testing.T) {
	tmp := t.TempDir()
	in := readForest(t, writeForest(t, tmp, 1500, 7))
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			in.Forest.Reset()
			if p := in.CheckLayout(l); len(p) > 0 {
				t.Fatalf("problems: %v", p)
			}
			spec := l.Table()
			write := func(s ddbwrite.Shard) (map[string]string, *importfiles.Manifest) {
				dir := filepath.Join(tmp, fmt.Sprintf("%s-%d-of-%d", name, s.K, s.Of))
				m, err := WriteImportFiles(context.Background(), in, FilesOptions{
					Dir: dir, Table: "t", ItemsPerFile: 700, Emit: EmitOptions{Layout: l, Shard: s},
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range m.Files {
					if s.Of > 1 && !strings.HasPrefix(f.Name, "data/"+s.Name()+"-part-") {
						t.Errorf("shard %s wrote %s: want the shard in the name", s, f.Name)
					}
				}
				if m.Shard != s.String() {
					t.Errorf("manifest shard = %q, want %q", m.Shard, s.String())
				}
				return readItems(t, dir, spec), m
			}
			whole, wm := write(ddbwrite.Shard{})
			if int64(len(whole)) != wm.Items || len(whole) < 1500 {
				t.Fatalf("unsharded run: %d distinct items, manifest says %d", len(whole), wm.Items)
			}
			for n := 1; n <= 4; n++ {
				union := map[string]int{}
				var items int64
				for k := range n {
					s := ddbwrite.Shard{K: k, Of: n}
					got, m := write(s)
					items += m.Items
					if n > 1 && (len(got) == 0 || len(got) == len(whole)) {
						t.Errorf("shard %s has %d of %d items: the split is not a split", s, len(got), len(whole))
					}
					for key, text := range got {
						if prev, dup := union[key]; dup {
							t.Errorf("N=%d: item %s is in shard %d and in shard %d", n, key, prev, k)
						}
						union[key] = k
						if whole[key] != text {
							t.Errorf("N=%d shard %d: item %s is %s, unsharded run wrote %s", n, k, key, text, whole[key])
						}
					}
				}
				if len(union) != len(whole) || items != wm.Items {
					t.Errorf("N=%d: the shards wrote %d distinct items (%d by their manifests), the unsharded run %d", n, len(union), items, len(whole))
				}
				for key := range whole {
					if _, ok := union[key]; !ok {
						t.Errorf("N=%d: item %s is in no shard", n, key)
					}
				}
			}
		})
	}
}

// For N = 1 to 4, N writers run side by side into one DynamoDB Local table,
// each writing its shard: the table ends with exactly the unsharded run's
// items, and the writers' counts add up to it, so none was written twice.
func TestShardsUnionDynamoDBLocal(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, ep)
	in := readForest(t, writeForest(t, t.TempDir(), 400, 11))
	for _, name := range []string{layouts.PathName, layouts.ClosureName} {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in.Forest.Reset()
		if p := in.CheckLayout(l); len(p) > 0 {
			t.Fatalf("problems: %v", p)
		}
		spec := l.Table()
		whole := map[string]string{}
		if _, err := in.Emit(context.Background(), EmitOptions{Layout: l}, func(_ int64, item layouts.Item) error {
			whole[layouts.KeyOf(spec, item)] = string(ddbjson.AppendItem(nil, item))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 4; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", name, n), func(t *testing.T) {
				table := ddblocal.NewTable(t, client, spec)
				var wg sync.WaitGroup
				written := make([]int64, n)
				errs := make([]error, n)
				for k := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ctx := context.Background()
						w := ddbwrite.NewDDBWriter(client, table, spec, ddbwrite.WriterOptions{Concurrency: 2})
						_, err := in.Emit(ctx, EmitOptions{Layout: l, Shard: ddbwrite.Shard{K: k, Of: n}}, func(seq int64, item layouts.Item) error {
							return w.Write(ctx, seq, item)
						})
						st, cerr := w.Close(ctx)
						written[k], errs[k] = st.Items, err
						if errs[k] == nil {
							errs[k] = cerr
						}
					}()
				}
				wg.Wait()
				var total int64
				for k := range n {
					if errs[k] != nil {
						t.Fatalf("shard %d/%d: %v", k, n, errs[k])
					}
					total += written[k]
				}
				if total != int64(len(whole)) {
					t.Errorf("the %d shards wrote %d items, the unsharded run has %d", n, total, len(whole))
				}
				got := scanKeyed(t, client, table, spec)
				for key, text := range whole {
					if got[key] != text {
						t.Errorf("item %s: table has %q, want %q", key, got[key], text)
					}
				}
				if len(got) != len(whole) {
					t.Errorf("table has %d items, want %d", len(got), len(whole))
				}
			})
		}
	}
}

// scanKeyed reads a whole table as DynamoDB JSON keyed by primary key.
func scanKeyed(t *testing.T, c *dynamodb.Client, table string, spec layouts.TableSpec) map[string]string {
	t.Helper()
	got := map[string]string{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		for _, it := range page.Items {
			got[layouts.KeyOf(spec, it)] = string(ddbjson.AppendItem(nil, it))
		}
	}
	return got
}
