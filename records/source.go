// Package records reads and writes the record files treeport takes and
// gives: each format's reader (a Source: CSV, JSON, JSON Lines, Parquet and
// DynamoDB JSON, see OpenSource) beside its writer (a Writer, see
// NewWriter), with the format table and the one rule that tells a file's
// format from its name (format.go).
package records

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// Source reads records one at a time.
//
// Next returns io.EOF at the end. A *transform.RowError means that one row
// is bad: the caller may call Next again to go on (a source that cannot go on,
// after a syntax error in a JSON array for instance, returns io.EOF next).
// With a RowError, Next also returns what it could read of the row (its id,
// parent, File, Line and, with KeepRaw, Raw) when it could read that much,
// and nil otherwise, so the caller can reject the row's subtree and keep the
// row in a rejects file. Any other error is a failure to read the input, and
// ends the stream.
//
// Every call returns a fresh *transform.Record that the caller may keep.
// A Source is not safe for concurrent use. The caller closes it.
type Source interface {
	Next(ctx context.Context) (*transform.Record, error)
	Close() error
}

// SourceOptions say how to read an input.
type SourceOptions struct {
	// Format is csv, json, jsonl, parquet or ddbjson; "" tells it from the
	// file name (see DetectFormat).
	Format string
	// IDField and ParentField name the id and parent fields; "" means "id"
	// and "parent_id". Both are taken out of the record's attributes.
	IDField     string
	ParentField string
	// CSVDelimiter separates CSV fields; 0 means ','.
	CSVDelimiter rune
	// Types gives CSV columns a type (S, N, BOOL, JSON or B, see ParseTypes).
	// Untyped columns are strings. Other formats carry their own types.
	Types map[string]string
	// KeepRaw fills Record.Raw with the record as it came in.
	KeepRaw bool
}

func (o SourceOptions) idField() string {
	if o.IDField == "" {
		return "id"
	}
	return o.IDField
}

func (o SourceOptions) parentField() string {
	if o.ParentField == "" {
		return "parent_id"
	}
	return o.ParentField
}

// columnTypes are the types ParseTypes accepts, with what each means.
var columnTypes = map[string]string{
	"S":    "string (the default)",
	"N":    "number",
	"BOOL": "true or false (also 1 or 0)",
	"JSON": "a JSON value, typed as a JSON source types it",
	"B":    "binary, base64 encoded",
}

// ParseTypes parses a --types value, "size:N,active:BOOL,tags:JSON", into
// a map of column names to types. Types are S, N, BOOL, JSON and B, in any
// case. A column may be named only once.
func ParseTypes(spec string) (map[string]string, error) {
	out := map[string]string{}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.LastIndexByte(part, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q: want COLUMN:TYPE, such as size:N", part)
		}
		col, typ := part[:i], strings.ToUpper(strings.TrimSpace(part[i+1:]))
		if _, ok := columnTypes[typ]; !ok {
			return nil, fmt.Errorf("%q: unknown type %q; want S, N, BOOL, JSON or B", part, part[i+1:])
		}
		if _, dup := out[col]; dup {
			return nil, fmt.Errorf("column %q is typed twice", col)
		}
		out[col] = typ
	}
	return out, nil
}

// DetectFormat tells an input's format from its name, by the one rule
// export and gen name their files with (FormatFromPath): .csv;
// .json; .jsonl or .ndjson; .parquet or .pq; .ddbjson, .ddb.json or
// .ddb.jsonl (DynamoDB JSON), after taking off a .gz, .zst or .zstd suffix. A
// directory is a DynamoDB export (ddbjson). It returns "" when the name does
// not tell.
func DetectFormat(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return FormatDDBJSON
	}
	return FormatFromPath(path)
}

// OpenSource opens the input at path. Gzip and zstd input is recognised by
// its magic bytes, whatever its name. An error here (a missing file, an
// unknown format, a CSV header without the id column) means nothing can be
// read; problems with single records come later, from Next.
//
// An error that says what is wrong with the input, or with the options that
// say how to read it, is infile.ErrInvalid (errors.Is); an error reading the file
// itself is not.
func OpenSource(path string, opts SourceOptions) (Source, error) {
	src, err := openSource(path, opts)
	if err != nil {
		return nil, invalidInput(err)
	}
	return src, nil
}

// invalidInput marks err as a problem of the input, unless it is one
// already or an error of the file system or of reading the file.
func invalidInput(err error) error {
	var re *infile.ReadError
	var pe *fs.PathError
	if errors.Is(err, infile.ErrInvalid) || errors.As(err, &re) || errors.As(err, &pe) {
		return err
	}
	return &marked{err, infile.ErrInvalid}
}

func openSource(path string, opts SourceOptions) (Source, error) {
	format := strings.ToLower(opts.Format)
	if format == "" {
		format = DetectFormat(path)
		if sniffed := sniffFormat(path, format); sniffed != "" {
			format = sniffed
		}
	}
	if err := checkNotEmpty(path, format); err != nil {
		return nil, err
	}
	if format == "" {
		return nil, fmt.Errorf("cannot tell the format of %s from its name or its first bytes; use --format csv, json, jsonl, parquet or ddbjson", path)
	}
	if format == "ndjson" {
		format = FormatJSONL
	}
	if format != FormatCSV && len(opts.Types) > 0 {
		return nil, fmt.Errorf("%w: --types applies to CSV only; %s carries its own types", infile.ErrInvalid, format)
	}
	switch format {
	case FormatCSV:
		return openCSV(path, opts)
	case FormatJSON, FormatJSONL:
		return openJSON(path, format, opts)
	case FormatParquet:
		return openParquet(path, opts)
	case FormatDDBJSON:
		return openDDBJSON(path, opts)
	}
	return nil, fmt.Errorf("unknown format %q; want csv, json, jsonl, parquet or ddbjson", opts.Format)
}

// emptyHints say, for each format, what a file of it holds at the least.
var emptyHints = map[string]string{
	FormatCSV:     "a CSV input needs a header row naming its columns",
	FormatJSON:    "a JSON input is an array of objects ([] for none) or one object a line",
	FormatJSONL:   "a JSON Lines input is one object a line",
	"ndjson":      "a JSON Lines input is one object a line",
	FormatParquet: "a Parquet file holds at least its header and its footer",
	FormatDDBJSON: `a DynamoDB JSON input is one {"Item":{…}} a line`,
}

// checkNotEmpty refuses a file that holds nothing, or nothing but blank
// space (after decompressing it, and a byte order mark), whatever its
// format: no format reads it as an input of no records (that is [] in
// JSON), and an empty file is most often one whose writing failed. A
// directory (an export) is left to its source.
func checkNotEmpty(path, format string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return nil // the source says what is wrong
	}
	hint := emptyHints[format]
	if hint == "" {
		hint = "give a file with the records"
	}
	if fi.Size() == 0 {
		return fmt.Errorf("%w: %s: the file is empty: %s", infile.ErrInvalid, path, hint)
	}
	if format == FormatParquet {
		return nil
	}
	in, err := infile.Open(path)
	if err != nil {
		return nil
	}
	defer in.Close()
	head, err := in.R.Peek(readBufferSize)
	if len(head) == readBufferSize {
		return nil // a long run of blank space is the source's to read
	}
	if err != nil && err != io.EOF && len(head) == 0 {
		// Not empty: its data cannot be read (a zstd window over the
		// decoder's limit, corrupt gzip), which the source says where.
		return nil
	}
	if len(bytes.TrimSpace(bytes.TrimPrefix(head, []byte("\uFEFF")))) > 0 {
		return nil
	}
	what := "the file is empty"
	if len(head) > 0 {
		what = "the file holds nothing but blank space"
	}
	return fmt.Errorf("%w: %s: %s: %s", infile.ErrInvalid, path, what, hint)
}

// sniffFormat tells the format that the first bytes of a file name for
// sure where its name (which says byName) does not: Parquet by its magic
// number, whatever the name; and DynamoDB JSON, for a name that says JSON
// or nothing, by a first line that decodes as an {"Item": …} line (the data
// files of an export to S3 are named *.json.gz). It returns "" when they do
// not tell, and for a directory.
func sniffFormat(path, byName string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var head [4]byte
	if n, _ := io.ReadFull(f, head[:]); n == 4 && string(head[:]) == "PAR1" {
		return FormatParquet
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return ""
	}
	in, err := infile.New(f, path)
	if err != nil {
		return ""
	}
	defer in.Close()
	if byName != "" && byName != FormatJSON {
		return ""
	}
	first, _ := in.R.Peek(64 << 10)
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	first = bytes.TrimSpace(bytes.TrimPrefix(first, []byte("\uFEFF")))
	if !bytes.HasPrefix(first, []byte("{")) {
		return ""
	}
	if _, err := ddbjson.DecodeLine(first); err == nil {
		return FormatDDBJSON
	}
	return ""
}

// readBufferSize is the size of an input's read buffer.
const readBufferSize = infile.ReadBufferSize

// parseErr is infile.Parsef: a row that cannot be parsed, matching
// transform.ErrParse.
func parseErr(format string, args ...any) error { return infile.Parsef(format, args...) }

// takeKey takes the id or the parent out of the attributes. An S is taken
// as it is and an N as its text; a NULL or an absent field gives "". Another
// type is an error.
func takeKey(attrs map[string]types.AttributeValue, field, what string) (string, error) {
	v, ok := attrs[field]
	if !ok {
		return "", nil
	}
	delete(attrs, field)
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case *types.AttributeValueMemberN:
		return v.Value, nil
	case *types.AttributeValueMemberNULL:
		return "", nil
	}
	return "", parseErr("the %s field %q is %s; want a string or a number", what, field, typeName(v))
}

// takeIDs takes the id and the parent out of the attributes, as takeKey does.
func takeIDs(rec *transform.Record, opts SourceOptions) error {
	id, err := takeKey(rec.Attrs, opts.idField(), "id")
	if err != nil {
		delete(rec.Attrs, opts.parentField())
		return err
	}
	rec.ID = id
	parent, err := takeKey(rec.Attrs, opts.parentField(), "parent")
	rec.Parent = parent
	if err != nil {
		return err
	}
	if _, ok := rec.Attrs[""]; ok {
		return parseErr("an attribute has an empty name; DynamoDB needs at least one character")
	}
	// Every rule DynamoDB applies to an attribute, so that no write is the
	// first to find one (the CSV source checks its cells as it reads them).
	// A source's row errors are all ErrParse: a value that the row holds
	// but DynamoDB cannot.
	if err := transform.CheckAttrs(rec.Attrs); err != nil {
		return &marked{err, transform.ErrParse}
	}
	return nil
}

func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "a string"
	case *types.AttributeValueMemberN:
		return "a number"
	case *types.AttributeValueMemberB:
		return "binary"
	case *types.AttributeValueMemberBOOL:
		return "a boolean"
	case *types.AttributeValueMemberNULL:
		return "null"
	case *types.AttributeValueMemberL:
		return "a list"
	case *types.AttributeValueMemberM:
		return "an object"
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		return "a set"
	}
	return fmt.Sprintf("%T", v)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
