package records

import (
	"strings"
	"testing"
)

func TestJSONSource(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		data  string
		opts  SourceOptions
		wants []want
	}{
		{
			name: "array over many lines",
			file: "n.json",
			data: "[\n  {\"id\": \"r\", \"name\": \"root\"},\n  {\n    \"id\": \"c\",\n    \"parent_id\": \"r\"\n  }\n]\n",
			wants: []want{
				{id: "r", line: 2, attrs: attrs{"name": sv("root")}},
				{id: "c", parent: "r", line: 3, attrs: attrs{}},
			},
		},
		{
			name: "every JSON type",
			file: "n.json",
			data: `[{"id":"a","s":"x","e":"","n":-1.50E+3,"big":12345678901234567890,"t":true,"f":false,"z":null,"l":[1,"a",[]],"m":{"k":{"j":"v"}}}]`,
			wants: []want{{id: "a", line: 1, attrs: attrs{
				"s": sv("x"), "e": sv(""), "n": nv("-1.50E+3"), "big": nv("12345678901234567890"),
				"t": bv(true), "f": bv(false), "z": nullv(),
				"l": lv(nv("1"), sv("a"), lv()), "m": mv(attrs{"k": mv(attrs{"j": sv("v")})}),
			}}},
		},
		{
			name: "numeric ids keep their text",
			file: "n.json",
			data: `[{"id":42,"parent_id":null},{"id":1.50,"parent_id":42},{"id":"x","parent_id":""}]`,
			wants: []want{
				{id: "42", line: 1, attrs: attrs{}},
				{id: "1.50", parent: "42", line: 1, attrs: attrs{}},
				{id: "x", line: 1, attrs: attrs{}},
			},
		},
		{
			name: "JSON Lines with blank lines and CRLF",
			file: "n.jsonl",
			data: "{\"id\":\"r\"}\r\n\r\n  \n{\"id\":\"c\",\"parent_id\":\"r\"}\r\n{\"id\":\"d\",\"parent_id\":\"c\"}",
			wants: []want{
				{id: "r", line: 1},
				{id: "c", parent: "r", line: 4},
				{id: "d", parent: "c", line: 5},
			},
		},
		{
			name: "JSON Lines in a .json file",
			file: "n.json",
			data: "\uFEFF{\"id\":\"r\"}\n{\"id\":\"c\",\"parent_id\":\"r\"}\n",
			wants: []want{
				{id: "r", line: 1},
				{id: "c", parent: "r", line: 2},
			},
		},
		{
			name: "pretty-printed objects one after the other",
			file: "n.json",
			data: "{\n  \"id\": \"r\"\n}\n{\n  \"id\": \"c\",\n  \"parent_id\": \"r\"\n} {\"id\":\"d\"}\n",
			wants: []want{
				{id: "r", line: 1},
				{id: "c", parent: "r", line: 4},
				{id: "d", line: 7},
			},
		},
		{
			name: "emoji and non-ASCII",
			file: "n.ndjson",
			data: "{\"id\":\"😀\",\"имя\":\"\\u00e9\\ud83d\\ude00\"}\n{\"id\":\"中文\",\"parent_id\":\"😀\"}\n",
			wants: []want{
				{id: "😀", line: 1, attrs: attrs{"имя": sv("é😀")}},
				{id: "中文", parent: "😀", line: 2},
			},
		},
		{
			name:  "empty array",
			file:  "n.json",
			data:  " [ ] ",
			wants: nil,
		},
		{
			name:  "empty array",
			file:  "n.json",
			data:  "\n[ ]\n",
			wants: nil,
		},
		{
			name:  "custom field names",
			file:  "n.jsonl",
			opts:  SourceOptions{IDField: "key", ParentField: "up"},
			data:  `{"key":"b","up":"a","id":"kept"}`,
			wants: []want{{id: "b", parent: "a", line: 1, attrs: attrs{"id": sv("kept")}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, []byte(tt.data))
			checkResults(t, path, openAll(t, path, tt.opts), tt.wants)
		})
	}
}

func TestJSONSourceErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		data  string
		wants []want
	}{
		{
			name: "bad lines in JSON Lines, reading goes on",
			file: "n.jsonl",
			data: "{\"id\":\"a\"}\n{\"id\":\"b\",}\nnot json\n[1]\n{\"id\":\"c\",\"n\":1e999}\n{\"id\":true}\n{\"id\":\"d\",\"parent_id\":{}}\n{\"id\":\"e\"\n{\"id\":\"f\"}\n",
			wants: []want{
				{id: "a", line: 1},
				{id: "b", line: 2, errMsg: "column 11: want a key in quotes, found '}'"},
				{id: "", line: 3, errMsg: "column 1: want an object, found 'n'"},
				{id: "", line: 4, errMsg: "want an object, found an array"},
				{id: "c", line: 5, errMsg: `column 15: n: not a DynamoDB number: "1e999" is larger than DynamoDB's largest number`},
				{id: "", line: 6, errMsg: `the id field "id" is a boolean; want a string or a number`},
				{id: "d", line: 7, errMsg: `the parent field "parent_id" is an object`},
				{id: "e", line: 8, errMsg: "found the end of the input"},
				{id: "f", line: 9},
			},
		},
		{
			name: "a bad object in an array, reading goes on",
			file: "n.json",
			data: "[\n{\"id\":\"a\"},\n{\"id\":\"b\",\n \"x\": tru},\n7,\n{\"id\":\"c\"}\n]",
			wants: []want{
				{id: "a", line: 2},
				{id: "b", line: 3, errMsg: "line 4, column 7: x: want a JSON value, found 't'"},
				{id: "", line: 5, errMsg: "want an object, found a number"},
				{id: "c", line: 6},
			},
		},
		{
			name: "missing comma in an array ends it",
			file: "n.json",
			data: "[{\"id\":\"a\"}\n {\"id\":\"b\"}, {\"id\":\"c\"}]",
			wants: []want{
				{id: "a", line: 1},
				{id: "", line: 2, errMsg: "want ',' or ']' after an element of the array, found '{'; reading stops here"},
			},
		},
		{
			name: "unterminated array",
			file: "n.json",
			data: "[{\"id\":\"a\"},\n{\"id\":\"b\"",
			wants: []want{
				{id: "a", line: 1},
				{id: "", line: 2, errMsg: "the input ends inside an object"},
			},
		},
		{
			name: "missing closing bracket",
			file: "n.json",
			data: "[{\"id\":\"a\"}\n",
			wants: []want{
				{id: "a", line: 1},
				{id: "", line: 2, errMsg: "a ']' is missing at the end"},
			},
		},
		{
			name: "trailing comma",
			file: "n.json",
			data: `[{"id":"a"},]`,
			wants: []want{
				{id: "a", line: 1},
				{id: "", line: 1, errMsg: "want an object in the array, found ']'"},
			},
		},
		{
			name: "garbage after the array",
			file: "n.json",
			data: "[{\"id\":\"a\"}]\n\nx",
			wants: []want{
				{id: "a", line: 1},
				{id: "", line: 3, errMsg: "found 'x' after the array's closing ']'"},
			},
		},
		{
			name: "invalid UTF-8",
			file: "n.jsonl",
			data: "{\"id\":\"a\",\"s\":\"\xff\"}\n{\"id\":\"b\"}\n",
			wants: []want{
				{id: "a", line: 1, errMsg: "s: invalid UTF-8 in a string"},
				{id: "b", line: 2},
			},
		},
		{
			name: "duplicate key",
			file: "n.jsonl",
			data: `{"id":"a","x":1,"x":2}`,
			wants: []want{
				{id: "a", line: 1, errMsg: `key "x" appears twice`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, []byte(tt.data))
			checkResults(t, path, openAll(t, path, SourceOptions{}), tt.wants)
		})
	}
}

func TestJSONSourceNotJSON(t *testing.T) {
	path := writeTemp(t, "n.json", []byte("\n\nid,parent_id\n"))
	_, err := OpenSource(path, SourceOptions{})
	if err == nil || !strings.Contains(err.Error(), "(line 3) starts with 'i'") {
		t.Fatalf("got %v, want an error naming the line and the byte", err)
	}
}

func TestJSONRaw(t *testing.T) {
	data := "[ {\"id\": \"a\",\n \"n\": 1.0} ,{\"id\":\"b\",\"bad\":01}]"
	path := writeTemp(t, "n.json", []byte(data))
	got := openAll(t, path, SourceOptions{KeepRaw: true})
	if len(got) != 2 {
		t.Fatalf("got %d results, want 2", len(got))
	}
	if want := "{\"id\": \"a\",\n \"n\": 1.0}"; string(got[0].rec.Raw) != want {
		t.Errorf("Raw %q, want %q", got[0].rec.Raw, want)
	}
	if got[1].err == nil || got[1].rec == nil || string(got[1].rec.Raw) != `{"id":"b","bad":01}` {
		t.Errorf("the bad object: %+v, want a RowError with its Raw", got[1])
	}
}

// A long JSON Lines input crosses many buffer refills.
func TestJSONSourceLong(t *testing.T) {
	var b strings.Builder
	const n = 30000
	for i := range n {
		b.WriteString(`{"id":"node-`)
		b.WriteString(strings.Repeat("x", i%50))
		b.WriteString(`","pad":"`)
		b.WriteString(strings.Repeat("y", i%300))
		b.WriteString("\"}\n")
	}
	for _, file := range []string{"n.jsonl", "n.json"} {
		t.Run(file, func(t *testing.T) {
			path := writeTemp(t, file, []byte(b.String()))
			got := openAll(t, path, SourceOptions{})
			if len(got) != n {
				t.Fatalf("got %d records, want %d", len(got), n)
			}
			for i, r := range got {
				if r.err != nil || r.rec.Line != i+1 || len(r.rec.ID) != 5+i%50 {
					t.Fatalf("#%d: %+v %v", i, r.rec, r.err)
				}
			}
		})
	}
}
