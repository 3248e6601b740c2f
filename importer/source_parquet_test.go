package importer

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/parquet-go/parquet-go"
)

type pqOwner struct {
	Name string `parquet:"name"`
	Age  *int32 `parquet:"age,optional"`
}

// pqRow has a column of every kind the source types.
type pqRow struct {
	ID       int64            `parquet:"id"`
	ParentID *int64           `parquet:"parent_id,optional"`
	Name     string           `parquet:"name"`
	Empty    string           `parquet:"empty"`
	Note     *string          `parquet:"note,optional"`
	Score    float64          `parquet:"score"`
	Small    float32          `parquet:"small"`
	Price    int64            `parquet:"price,decimal(2:18)"`
	Rate     int32            `parquet:"rate,decimal(4:9)"`
	Big      []byte           `parquet:"big,decimal(3:38)"`
	When     time.Time        `parquet:"when,timestamp(microsecond)"`
	Millis   int64            `parquet:"millis,timestamp(millisecond)"`
	Day      int32            `parquet:"day,date"`
	Clock    int64            `parquet:"clock,time(microsecond)"`
	Blob     []byte           `parquet:"blob"`
	Active   bool             `parquet:"active"`
	Count    uint32           `parquet:"count"`
	Huge     uint64           `parquet:"huge"`
	UUID     [16]byte         `parquet:"uuid,uuid"`
	Tags     []string         `parquet:"tags,list"`
	Maybe    []*int32         `parquet:"maybe,list" parquet-element:",optional"`
	Nums     []int32          `parquet:"nums"`
	Attrs    map[string]int32 `parquet:"attrs"`
	Owner    *pqOwner         `parquet:"owner,optional"`
	Team     []pqOwner        `parquet:"team,list"`
	Matrix   [][]int32        `parquet:"matrix,list" parquet-element:",list"`
}

func ptr[T any](v T) *T { return &v }

// bigEndian is a decimal's unscaled value as the two's complement bytes
// Parquet stores.
func bigEndian(v int64) []byte {
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func writeParquet[T any](t testing.TB, rows []T, perGroup int) string {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	for i := 0; i < len(rows); i += perGroup {
		if _, err := w.Write(rows[i:min(i+perGroup, len(rows))]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "nodes.parquet", buf.Bytes())
}

func TestParquetSource(t *testing.T) {
	when := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	rows := []pqRow{
		{
			ID: 1, Name: "root", Score: 0.1, Small: 1.5, Price: -12345, Rate: 5, Big: bigEndian(-1),
			When: when, Millis: when.UnixMilli(), Day: 19724, Clock: (3*3600 + 4*60 + 5) * 1e6,
			Blob: []byte{0, 0xff}, Active: true, Count: math.MaxUint32, Huge: math.MaxUint64,
			UUID:   [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0},
			Tags:   []string{"a", "é😀"},
			Maybe:  []*int32{ptr(int32(1)), nil},
			Nums:   []int32{7, 8},
			Attrs:  map[string]int32{"k": 1},
			Owner:  &pqOwner{Name: "ann", Age: ptr(int32(40))},
			Team:   []pqOwner{{Name: "bob"}, {Name: "cy", Age: ptr(int32(3))}},
			Matrix: [][]int32{{1, 2}, {}, {3}},
		},
		{ID: 2, ParentID: ptr(int64(1)), Name: "child", Note: ptr("n"), Score: 1e300 / 1e290, Small: 0, Big: bigEndian(1234567)},
	}
	path := writeParquet(t, rows, 10)
	got := openAll(t, path, SourceOptions{KeepRaw: true})
	checkResults(t, path, got, []want{
		{id: "1", line: 1, attrs: attrs{
			"name": sv("root"), "empty": sv(""), "score": nv("0.1"), "small": nv("1.5"),
			"price": nv("-123.45"), "rate": nv("0.0005"), "big": nv("-0.001"),
			"when": sv("2024-01-02T03:04:05.123456Z"), "millis": sv("2024-01-02T03:04:05.123Z"),
			"day": sv("2024-01-02"), "clock": sv("03:04:05"),
			"blob": binv([]byte{0, 0xff}), "active": bv(true),
			"count": nv("4294967295"), "huge": nv("18446744073709551615"),
			"uuid":   sv("12345678-9abc-def0-1234-56789abcdef0"),
			"tags":   lv(sv("a"), sv("é😀")),
			"maybe":  lv(nv("1"), nullv()),
			"nums":   lv(nv("7"), nv("8")),
			"attrs":  mv(attrs{"k": nv("1")}),
			"owner":  mv(attrs{"name": sv("ann"), "age": nv("40")}),
			"team":   lv(mv(attrs{"name": sv("bob")}), mv(attrs{"name": sv("cy"), "age": nv("3")})),
			"matrix": lv(lv(nv("1"), nv("2")), lv(), lv(nv("3"))),
		}},
		{id: "2", parent: "1", line: 2, attrs: attrs{
			"name": sv("child"), "empty": sv(""), "note": sv("n"), "score": nv("10000000000"), "small": nv("0"),
			"price": nv("0.00"), "rate": nv("0.0000"), "big": nv("1234.567"),
			"when": sv("0001-01-01T00:00:00Z"), "millis": sv("1970-01-01T00:00:00Z"), "day": sv("1970-01-01"), "clock": sv("00:00:00"),
			"blob": binv([]byte{}), "active": bv(false), "count": nv("0"), "huge": nv("0"),
			"uuid": sv("00000000-0000-0000-0000-000000000000"),
			"tags": lv(), "maybe": lv(), "nums": lv(), "attrs": mv(attrs{}), "team": lv(), "matrix": lv(),
		}},
	})
	if len(got) == 2 && got[1].rec != nil {
		raw := string(got[1].rec.Raw)
		for _, part := range []string{`"id":2`, `"parent_id":1`, `"price":0.00`, `"blob":""`, `"tags":[]`, `"name":"child"`} {
			if !strings.Contains(raw, part) {
				t.Errorf("Raw %s does not hold %s", raw, part)
			}
		}
	}
}

func TestParquetStringIDs(t *testing.T) {
	type row struct {
		ID     string  `parquet:"node"`
		Parent *string `parquet:"up,optional"`
		Value  float64 `parquet:"value"`
	}
	rows := []row{
		{ID: "😀 root", Value: 1},
		{ID: "b", Parent: ptr("😀 root"), Value: math.NaN()},
		{ID: "c", Parent: ptr(""), Value: math.Inf(1)},
		{ID: "d", Parent: ptr("b"), Value: 1e-200},
		{ID: "e", Parent: ptr("b"), Value: -2.5e-7},
	}
	path := writeParquet(t, rows, 2)
	got := openAll(t, path, SourceOptions{IDField: "node", ParentField: "up"})
	checkResults(t, path, got, []want{
		{id: "😀 root", line: 1, attrs: attrs{"value": nv("1")}},
		{id: "b", parent: "😀 root", line: 2, errMsg: `(row 2): id "b": column "value" (DOUBLE): NaN cannot be stored as a DynamoDB number`},
		{id: "c", line: 3, errMsg: "+Inf cannot be stored"},
		{id: "d", parent: "b", line: 4, errMsg: "1e-200 is outside DynamoDB's number range"},
		{id: "e", parent: "b", line: 5, attrs: attrs{"value": nv("-2.5e-07")}},
	})
	for _, r := range got {
		if r.err != nil && r.err.Unit != "row" {
			t.Errorf("RowError.Unit = %q, want row", r.err.Unit)
		}
	}
}

func TestParquetBadIDType(t *testing.T) {
	type row struct {
		ID       bool   `parquet:"id"`
		ParentID string `parquet:"parent_id"`
	}
	path := writeParquet(t, []row{{ID: true}}, 1)
	checkResults(t, path, openAll(t, path, SourceOptions{}), []want{
		{line: 1, errMsg: `the id field "id" is a boolean; want a string or a number`},
	})
}

// Many row groups are read one after the other, with rows numbered across them.
func TestParquetRowGroups(t *testing.T) {
	type row struct {
		ID       int32  `parquet:"id"`
		ParentID *int32 `parquet:"parent_id,optional"`
		Pad      string `parquet:"pad"`
	}
	var rows []row
	const n = 5000
	for i := range n {
		r := row{ID: int32(i), Pad: strings.Repeat("x", i%40)}
		if i > 0 {
			r.ParentID = ptr(int32(i / 2))
		}
		rows = append(rows, r)
	}
	path := writeParquet(t, rows, 700)
	got := openAll(t, path, SourceOptions{})
	if len(got) != n {
		t.Fatalf("got %d records, want %d", len(got), n)
	}
	for i, r := range got {
		wantParent := ""
		if i > 0 {
			wantParent = strconv.Itoa(i / 2)
		}
		if r.err != nil || r.rec.ID != strconv.Itoa(i) || r.rec.Parent != wantParent || r.rec.Line != i+1 {
			t.Fatalf("#%d: %+v %v", i, r.rec, r.err)
		}
		if pad, _ := r.rec.Attrs["pad"].(*types.AttributeValueMemberS); pad == nil || len(pad.Value) != i%40 {
			t.Fatalf("#%d: pad %v", i, r.rec.Attrs["pad"])
		}
	}
}

func TestParquetNotParquet(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		err  string
	}{
		{name: "text", data: []byte("id,parent_id\n"), err: "is not a Parquet file that can be read"},
		{name: "gzip", data: gzipped(t, []byte("PAR1")), err: "is gzip-compressed; Parquet needs random access"},
		{name: "empty", data: nil, err: "is not a Parquet file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "n.parquet", tt.data)
			src, err := OpenSource(path, SourceOptions{})
			if err == nil {
				src.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not say %q and the file", err, tt.err)
			}
		})
	}
}

func TestParquetTruncated(t *testing.T) {
	type row struct {
		ID string `parquet:"id"`
	}
	path := writeParquet(t, []row{{ID: "a"}}, 1)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := writeTemp(t, "n.parquet", data[:len(data)-10])
	if src, err := OpenSource(cut, SourceOptions{}); err == nil {
		src.Close()
		t.Fatal("a cut file opened without an error")
	}
}
