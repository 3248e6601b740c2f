package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// ItemSource reads DynamoDB items, one {"Item":{...}} a line, from a file or
// from the directory of an ExportTableToPointInTime.
//
// Next returns the item with the data file and the 1-based line it is on,
// and io.EOF at the end. A *transform.RowError (with File and Line) is one
// bad line: the caller may call Next again to go on. Any other error ends
// the stream. Not safe for concurrent use; the caller closes it.
type ItemSource interface {
	Next(ctx context.Context) (item map[string]types.AttributeValue, file string, line int, err error)
	Close() error
}

// OpenItemSource opens DynamoDB JSON items at path: a file (gzip or zstd
// compressed or not), or an export directory. An export directory holds
// manifest-files.json, whose lines name the data files by their S3 keys
// (dataFileS3Key), and data/, where those files are found by their base
// names. Without a manifest, every data/*.json and data/*.json.gz is read,
// in name order.
func OpenItemSource(path string) (ItemSource, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		files, err = exportDataFiles(path)
		if err != nil {
			return nil, err
		}
	}
	return &itemSource{files: files, open: openInput}, nil
}

// exportDataFiles lists the data files of an export directory, in the order
// of its manifest.
func exportDataFiles(dir string) ([]string, error) {
	dataDir := filepath.Join(dir, "data")
	manifest := filepath.Join(dir, "manifest-files.json")
	raw, err := os.ReadFile(manifest)
	if errors.Is(err, os.ErrNotExist) {
		var files []string
		entries, err := os.ReadDir(dataDir)
		if err != nil {
			return nil, fmt.Errorf("importer: %s is not a DynamoDB export: it has no manifest-files.json and no data directory (%w)", dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() && (strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz")) {
				files = append(files, filepath.Join(dataDir, name))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("importer: %s has no data files (data/*.json.gz) and no manifest-files.json", dir)
		}
		return files, nil
	}
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	var files []string
	for i, line := range bytes.Split(raw, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var entry struct {
			DataFileS3Key string `json:"dataFileS3Key"`
		}
		if err := json.Unmarshal(line, &entry); err != nil || entry.DataFileS3Key == "" {
			return nil, fmt.Errorf("importer: %s:%d: want a JSON object with a dataFileS3Key", manifest, i+1)
		}
		f := filepath.Join(dataDir, path.Base(entry.DataFileS3Key))
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("importer: %s:%d names the data file %s, which is missing: %w", manifest, i+1, entry.DataFileS3Key, err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("importer: %s names no data files", manifest)
	}
	return files, nil
}

// itemSource reads its files one after the other.
type itemSource struct {
	files []string
	open  func(path string) (*input, error)
	fi    int
	in    *input
	r     *bufio.Reader
	file  string
	line  int
	done  bool
}

var _ ItemSource = (*itemSource)(nil)

func (s *itemSource) Next(ctx context.Context) (map[string]types.AttributeValue, string, int, error) {
	item, _, err := s.next()
	return item, s.file, s.line, err
}

// next reads the next non-blank line and decodes it. It returns the line's
// bytes too (valid until the next call).
func (s *itemSource) next() (map[string]types.AttributeValue, []byte, error) {
	for !s.done {
		if s.in == nil {
			if s.fi >= len(s.files) {
				s.done = true
				break
			}
			in, err := s.open(s.files[s.fi])
			if err != nil {
				s.done = true
				return nil, nil, err
			}
			s.in, s.r, s.file, s.line = in, in.r, s.files[s.fi], 0
			s.fi++
		}
		line, err := readLine(s.r)
		if err == errLineTooLong {
			s.line++
			return nil, nil, &transform.RowError{File: s.file, Line: s.line, Err: parseErr("the line is longer than %d MiB", maxRecordBytes>>20)}
		}
		if len(line) > 0 {
			s.line++
			// Only the end is trimmed, so that columns in errors count
			// from the start of the line.
			text := bytes.TrimRight(line, " \t\r\n")
			if len(bytes.TrimSpace(text)) == 0 {
				continue
			}
			item, derr := ddbjson.DecodeLine(text)
			if derr != nil {
				return nil, text, &transform.RowError{File: s.file, Line: s.line, Err: parseErr("%s", ddbErr(derr))}
			}
			return item, text, nil
		}
		if err == io.EOF {
			cerr := s.in.Close()
			s.in = nil
			if cerr != nil {
				s.done = true
				return nil, nil, fmt.Errorf("importer: closing %s: %w", s.file, cerr)
			}
			continue
		}
		if err != nil {
			s.done = true
			return nil, nil, inputError(err, s.file, s.line+1, "")
		}
	}
	return nil, nil, io.EOF
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line, with its '\n'. At the end of the input it
// returns the last line, if any, and io.EOF the next time. A line over
// maxRecordBytes is skipped, and errLineTooLong returned.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = r.ReadSlice('\n')
			if len(long) <= maxRecordBytes {
				long = append(long, line...)
			}
		}
		if len(long) > maxRecordBytes && (err == nil || err == io.EOF) {
			return nil, errLineTooLong
		}
		line = long
	}
	if err == nil {
		return line, nil
	}
	if err == io.EOF && len(line) > 0 {
		// The last line, without a '\n': give it now, io.EOF next time.
		return line, nil
	}
	return line, err
}

func (s *itemSource) Close() error {
	s.done = true
	if s.in != nil {
		err := s.in.Close()
		s.in = nil
		return err
	}
	return nil
}

// ddbErr words a ddbjson error for a message that already says where the
// line is.
func ddbErr(err error) string {
	var e *ddbjson.Error
	if errors.As(err, &e) {
		msg := fmt.Sprintf("column %d: %s", e.Offset+1, e.Msg)
		if e.Path != "" {
			msg = fmt.Sprintf("column %d: attribute %s: %s", e.Offset+1, e.Path, e.Msg)
		}
		return msg
	}
	return err.Error()
}

// ddbjsonSource reads records from DynamoDB JSON: each item is a node, with
// its id and parent (S or N) taken out of its attributes.
type ddbjsonSource struct {
	items *itemSource
	opts  SourceOptions
}

var _ Source = (*ddbjsonSource)(nil)

func openDDBJSON(path string, opts SourceOptions) (Source, error) {
	items, err := OpenItemSource(path)
	if err != nil {
		return nil, err
	}
	return &ddbjsonSource{items: items.(*itemSource), opts: opts}, nil
}

// Next reads the next item as a record. A line that is not a DynamoDB JSON
// item, or whose id is neither S nor N, is a RowError; reading goes on.
func (s *ddbjsonSource) Next(ctx context.Context) (*transform.Record, error) {
	item, text, err := s.items.next()
	var re *transform.RowError
	if err != nil && !errors.As(err, &re) {
		return nil, err
	}
	rec := &transform.Record{File: s.items.file, Line: s.items.line}
	if s.opts.KeepRaw && text != nil {
		rec.Raw = bytes.Clone(text)
	}
	if re != nil {
		salvageDDBIDs(text, rec, s.opts)
		re.ID = rec.ID
		return rec, re
	}
	rec.Attrs = item
	if err := takeIDs(rec, s.opts); err != nil {
		return rec, &transform.RowError{File: rec.File, Line: rec.Line, ID: rec.ID, Err: err}
	}
	return rec, nil
}

// salvageDDBIDs reads the id and the parent of a line that cannot be
// decoded, when encoding/json can read them.
func salvageDDBIDs(text []byte, rec *transform.Record, opts SourceOptions) {
	var line struct {
		Item map[string]map[string]json.RawMessage
	}
	if json.Unmarshal(text, &line) != nil || line.Item == nil {
		return
	}
	key := func(name string) string {
		for _, t := range []string{"S", "N"} {
			var s string
			if raw, ok := line.Item[name][t]; ok && json.Unmarshal(raw, &s) == nil {
				return s
			}
		}
		return ""
	}
	rec.ID = key(opts.idField())
	rec.Parent = key(opts.parentField())
}

func (s *ddbjsonSource) Close() error { return s.items.Close() }
