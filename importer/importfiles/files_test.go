package importfiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
)

func sinkItems(n int) []layouts.Item {
	items := make([]layouts.Item, n)
	for i := range items {
		items[i] = layouts.Item{
			"Id":   &types.AttributeValueMemberS{Value: fmt.Sprintf("n%d", i)},
			"size": &types.AttributeValueMemberN{Value: fmt.Sprint(i * 7)},
			"note": &types.AttributeValueMemberS{Value: strings.Repeat("x", i%50)},
		}
	}
	return items
}

// writeSink writes items with a new FileSink into dir and returns its files.
func writeSink(t *testing.T, dir string, items []layouts.Item, perFile int) []DataFile {
	t.Helper()
	sink, err := NewFileSink(FileSinkOptions{Dir: dir, ItemsPerFile: perFile})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if err := sink.Write(it); err != nil {
			t.Fatal(err)
		}
	}
	if sink.Items() != int64(len(items)) {
		t.Errorf("Items() = %d, want %d", sink.Items(), len(items))
	}
	files, err := sink.Close()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestFileSink(t *testing.T) {
	tests := []struct {
		name           string
		items, perFile int
		files          int
	}{
		{name: "nothing", items: 0, perFile: 10, files: 0},
		{name: "one item", items: 1, perFile: 1000, files: 1},
		{name: "one item a file", items: 5, perFile: 1, files: 5},
		{name: "files smaller than a batch", items: 1000, perFile: 300, files: 4},
		{name: "files of several batches", items: 5000, perFile: 1100, files: 5},
		{name: "exactly full", items: 2048, perFile: 1024, files: 2},
		{name: "the default split", items: 3000, perFile: 0, files: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := sinkItems(tt.items)
			dir := filepath.Join(t.TempDir(), "out")
			files := writeSink(t, dir, items, tt.perFile)
			if len(files) != tt.files {
				t.Fatalf("%d files, want %d: %+v", len(files), tt.files, files)
			}
			perFile := int64(tt.perFile)
			if perFile == 0 {
				perFile = 1_000_000
			}
			// The files hold the items in order, ItemsPerFile a file but
			// the last.
			var want bytes.Buffer
			for _, it := range items {
				want.Write(ddbjson.AppendLine(nil, it))
			}
			var got bytes.Buffer
			for i, f := range files {
				if wantName := fmt.Sprintf("data/part-%05d.json.gz", i); f.Name != wantName {
					t.Errorf("file %d is %s, want %s", i, f.Name, wantName)
				}
				if wantItems := min(perFile, int64(tt.items)-int64(i)*perFile); f.Items != wantItems {
					t.Errorf("%s holds %d items, want %d", f.Name, f.Items, wantItems)
				}
				data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Name)))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(data)
				if f.Bytes != int64(len(data)) || f.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("%s: %d bytes, sha256 %s; the file has %d bytes, sha256 %x", f.Name, f.Bytes, f.SHA256, len(data), sum)
				}
				zr, err := gzip.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				var raw bytes.Buffer
				if _, err := raw.ReadFrom(zr); err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				if f.Raw != int64(raw.Len()) {
					t.Errorf("%s: Raw = %d, the file holds %d bytes uncompressed", f.Name, f.Raw, raw.Len())
				}
				if n := int64(bytes.Count(raw.Bytes(), []byte{'\n'})); n != f.Items {
					t.Errorf("%s: %d lines, the entry says %d items", f.Name, n, f.Items)
				}
				got.Write(raw.Bytes())
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("the files do not hold the items in order:\n got %.200q\nwant %.200q", got.Bytes(), want.Bytes())
			}
		})
	}
}

// The same items give the same files, byte for byte, whatever the timing of
// the two writers.
func TestFileSinkDeterministic(t *testing.T) {
	items := sinkItems(7000)
	a := writeSink(t, filepath.Join(t.TempDir(), "a"), items, 1500)
	b := writeSink(t, filepath.Join(t.TempDir(), "b"), items, 1500)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("two runs wrote different files:\n%+v\n%+v", a, b)
	}
}

func TestFileSinkOptionErrors(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts FileSinkOptions
		want string
	}{
		{name: "directory not empty", opts: FileSinkOptions{Dir: full}, want: "not empty"},
		{name: "level too high", opts: FileSinkOptions{Dir: filepath.Join(t.TempDir(), "o"), Level: 10}, want: "gzip level 10"},
		{name: "level negative", opts: FileSinkOptions{Dir: filepath.Join(t.TempDir(), "o"), Level: -5}, want: "gzip level -5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFileSink(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
	if _, err := NewFileSink(FileSinkOptions{Dir: full}); !errors.Is(err, ErrOutputNotEmpty) {
		t.Errorf("error %v, want ErrOutputNotEmpty", err)
	}
}
