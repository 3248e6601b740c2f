package importfiles

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
)

// attrsOf is item as a slice of attributes, in an order unlike the sorted
// one the encoder writes.
func attrsOf(item layouts.Item) []layouts.Attr {
	var attrs []layouts.Attr
	for k, v := range item {
		attrs = append(attrs, layouts.Attr{Name: k, Value: v})
	}
	return attrs
}

// TestFileSinkWriteAttrs: WriteAttrs writes the same files as Write, byte
// for byte, for every way of splitting them, although the caller overwrites
// each item's memory as soon as WriteAttrs returns.
func TestFileSinkWriteAttrs(t *testing.T) {
	for _, tt := range []struct{ items, perFile int }{
		{0, 10}, {1, 1000}, {5, 1}, {1000, 300}, {5000, 1100}, {2048, 1024}, {3000, 0},
		{20000, 6000}, // several chunks a file
	} {
		t.Run(fmt.Sprintf("%d-by-%d", tt.items, tt.perFile), func(t *testing.T) {
			items := sinkItems(tt.items)
			for i := range items {
				if i%3 == 0 {
					items[i]["long"] = &types.AttributeValueMemberS{Value: strings.Repeat("é\"\n", 1+i%400)}
				}
			}
			want := writeSink(t, filepath.Join(t.TempDir(), "want"), items, tt.perFile)
			dir := filepath.Join(t.TempDir(), "got")
			sink, err := NewFileSink(FileSinkOptions{Dir: dir, ItemsPerFile: tt.perFile})
			if err != nil {
				t.Fatal(err)
			}
			var reused []layouts.Attr
			for _, it := range items {
				reused = append(reused[:0], attrsOf(it)...)
				for i := range reused {
					// A fresh value, which the sink must not keep.
					switch v := reused[i].Value.(type) {
					case *types.AttributeValueMemberS:
						reused[i].Value = &types.AttributeValueMemberS{Value: v.Value}
					case *types.AttributeValueMemberN:
						reused[i].Value = &types.AttributeValueMemberN{Value: v.Value}
					}
				}
				if err := sink.WriteAttrs(reused); err != nil {
					t.Fatal(err)
				}
				// Overwrite what the sink was given.
				for i := range reused {
					switch v := reused[i].Value.(type) {
					case *types.AttributeValueMemberS:
						v.Value = "overwritten"
					case *types.AttributeValueMemberN:
						v.Value = "0"
					}
					reused[i].Name = "gone"
				}
			}
			if sink.Items() != int64(len(items)) {
				t.Errorf("Items() = %d, want %d", sink.Items(), len(items))
			}
			got, err := sink.Close()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("WriteAttrs wrote\n%+v\nWrite wrote\n%+v", got, want)
			}
		})
	}
}

// A sink takes its items one way.
func TestFileSinkMixed(t *testing.T) {
	item := sinkItems(1)[0]
	a, err := NewFileSink(FileSinkOptions{Dir: filepath.Join(t.TempDir(), "a")})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(item); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteAttrs(attrsOf(item)); !errors.Is(err, ErrSinkMixed) {
		t.Errorf("WriteAttrs after Write: %v, want ErrSinkMixed", err)
	}
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := NewFileSink(FileSinkOptions{Dir: filepath.Join(t.TempDir(), "b")})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAttrs(attrsOf(item)); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(item); !errors.Is(err, ErrSinkMixed) {
		t.Errorf("Write after WriteAttrs: %v, want ErrSinkMixed", err)
	}
	if files, err := b.Close(); err != nil || len(files) != 1 || files[0].Items != 1 {
		t.Errorf("Close: %+v, %v; want one file of one item", files, err)
	}
}

// AppendAttrsLine encodes as ddbjson.AppendLine does, also past the 16
// attributes it sorts on the stack.
func TestAppendAttrsLine(t *testing.T) {
	for _, n := range []int{0, 1, 2, 15, 16, 17, 40} {
		item := layouts.Item{}
		for i := range n {
			item[fmt.Sprintf("a%d", (i*7919)%101)] = &types.AttributeValueMemberN{Value: fmt.Sprint(i)}
		}
		if got, want := AppendAttrsLine(nil, attrsOf(item)), ddbjson.AppendLine(nil, item); !bytes.Equal(got, want) {
			t.Errorf("%d attributes:\n got %s\nwant %s", n, got, want)
		}
	}
}
