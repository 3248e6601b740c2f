// Package ddbitems reads DynamoDB items written as DynamoDB JSON, one
// {"Item":{...}} a line: a file, gzip or zstd compressed or not, or the
// folder of an ExportTableToPointInTime, whose manifests it checks. records
// reads such items as records (--format ddbjson); exporter reads a
// DynamoDB export back to the nodes of a layout.
package ddbitems

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// Open opens DynamoDB JSON items at path: a file (gzip or zstd
// compressed or not), or a directory written by ExportTableToPointInTime.
//
// The directory may be the export's own folder (AWSDynamoDB/<export id>/,
// which holds manifest-summary.json, manifest-files.json and data/), the
// AWSDynamoDB folder above it, or the export prefix that holds AWSDynamoDB;
// when more than one export is found below path, the error lists them. The
// data files are read in the order of manifest-files.json, whose lines name
// them by their S3 keys (dataFileS3Key) and are found in data/ by their base
// names. Without a manifest, every data/*.json and data/*.json.gz is read,
// in name order.
//
// The export's own bookkeeping is checked, and a failed check wraps
// infile.ErrInvalid. At open: manifest-summary.json must say DYNAMODB_JSON and
// FULL_EXPORT (an Amazon Ion or an incremental export is refused), and its
// itemCount must be the sum of the files'. While reading: each data file
// must have the MD5 (md5Checksum) and hold the number of items (itemCount)
// that its manifest line gives. The MD5 is taken from the bytes as they are
// read, so each file is read once; a file found wrong at its end has had its
// items returned already, so a caller must not act on what it read before
// Next gives io.EOF.
func Open(path string) (*Reader, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	if !fi.IsDir() {
		return &Reader{files: []string{path}, open: infile.Open}, nil
	}
	dir, err := findExport(path)
	if err != nil {
		return nil, err
	}
	return openExport(dir)
}

// The files of an export's folder.
const (
	manifestFiles   = "manifest-files.json"
	manifestSummary = "manifest-summary.json"
	exportStarted   = "_started" // written when an export begins
)

// isExportFolder says whether dir is an export's own folder.
func isExportFolder(dir string) bool {
	for _, name := range []string{manifestSummary, manifestFiles, exportStarted} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

// findExport finds the export folder at dir: dir itself, or the one export
// folder in dir/*/ (dir is AWSDynamoDB/) or in dir/AWSDynamoDB/*/ (dir is
// the export prefix). With none, it returns dir, for openExport to read
// data/ or to say that dir is no export.
func findExport(dir string) (string, error) {
	if isExportFolder(dir) {
		return dir, nil
	}
	var found []string
	for _, parent := range []string{dir, filepath.Join(dir, "AWSDynamoDB")} {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			sub := filepath.Join(parent, e.Name())
			if e.IsDir() && isExportFolder(sub) {
				found = append(found, sub)
			}
		}
	}
	switch len(found) {
	case 0:
		return dir, nil
	case 1:
		return found[0], nil
	}
	sort.Strings(found)
	var list strings.Builder
	for _, f := range found {
		list.WriteString("\n  " + f)
		if about := describeExport(f); about != "" {
			list.WriteString(" (" + about + ")")
		}
	}
	return "", fmt.Errorf("%w: %s holds %d DynamoDB exports, and treeport reads one at a time; pass the folder of the one to read:%s", infile.ErrInvalid, dir, len(found), list.String())
}

// describeExport says which table an export is of and when it was taken,
// from its manifest-summary.json, to tell exports apart in a list.
func describeExport(dir string) string {
	raw, err := infile.ReadSmall(filepath.Join(dir, manifestSummary), infile.MaxManifestBytes)
	if err != nil {
		return ""
	}
	var s exportSummary
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	var parts []string
	if i := strings.LastIndex(s.TableArn, "table/"); i >= 0 {
		parts = append(parts, "table "+s.TableArn[i+len("table/"):])
	}
	if s.ExportTime != "" {
		parts = append(parts, "as of "+s.ExportTime)
	}
	if s.ExportType != "" && s.ExportType != "FULL_EXPORT" {
		parts = append(parts, s.ExportType)
	}
	return strings.Join(parts, ", ")
}

// exportSummary is what treeport reads of manifest-summary.json.
type exportSummary struct {
	TableArn     string `json:"tableArn"`
	ExportTime   string `json:"exportTime"`
	ItemCount    *int64 `json:"itemCount"`
	OutputFormat string `json:"outputFormat"`
	ExportType   string `json:"exportType"`
}

// exportFile is what a line of manifest-files.json says of a data file.
type exportFile struct {
	where string // manifest-files.json:N, for messages
	items int64  // itemCount; -1 when the line does not give it
	md5   []byte // md5Checksum, decoded; nil when the line does not give it
}

// exportAdvice ends the message of a check that an export failed.
const exportAdvice = "the export is incomplete or damaged; export the table again (or, if it was copied here, copy it again)"

// openExport opens the export folder dir, checking what its manifests say.
func openExport(dir string) (*Reader, error) {
	s := &Reader{open: infile.Open}
	summary := filepath.Join(dir, manifestSummary)
	raw, err := infile.ReadSmall(summary, infile.MaxManifestBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat(filepath.Join(dir, exportStarted)); err == nil {
			if _, err := os.Stat(filepath.Join(dir, manifestFiles)); errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w: %s is a DynamoDB export that has not finished: it has %s but no %s yet; wait for the export to complete (aws dynamodb describe-export) and try again", infile.ErrInvalid, dir, exportStarted, manifestSummary)
			}
		}
	case err != nil:
		return nil, fmt.Errorf("importer: %w", err)
	default:
		var sum exportSummary
		if err := json.Unmarshal(raw, &sum); err != nil {
			return nil, fmt.Errorf("%w: %s is not the summary of a DynamoDB export (%v); %s", infile.ErrInvalid, summary, err, exportAdvice)
		}
		if sum.OutputFormat != "" && sum.OutputFormat != "DYNAMODB_JSON" {
			return nil, notDDBJSON(dir, sum.OutputFormat)
		}
		if sum.ExportType != "" && sum.ExportType != "FULL_EXPORT" {
			return nil, fmt.Errorf("%w: %s is an export of type %s (%s): it holds changes, not the table's items; treeport reads full exports: export the table with --export-type FULL_EXPORT", infile.ErrInvalid, dir, sum.ExportType, manifestSummary)
		}
		if sum.ItemCount != nil {
			s.total, s.summary = *sum.ItemCount, summary
		}
	}
	files, checks, err := exportDataFiles(dir)
	if err != nil {
		return nil, err
	}
	s.files, s.checks = files, checks
	if s.summary != "" && checks != nil {
		var listed int64
		for _, c := range checks {
			if c.items < 0 {
				return s, nil // a line without its count: the files' ends check what they can
			}
			listed += c.items
		}
		if listed != s.total {
			return nil, fmt.Errorf("%w: %s counts %d items, but the lines of %s add up to %d: %s", infile.ErrInvalid, summary, s.total, filepath.Join(dir, manifestFiles), listed, exportAdvice)
		}
	}
	return s, nil
}

// notDDBJSON is the error for an export in another format than DynamoDB
// JSON.
func notDDBJSON(dir, format string) error {
	if format == "ION" {
		return fmt.Errorf("%w: %s is an Amazon Ion export (outputFormat ION); treeport reads DynamoDB JSON exports only, not Ion: export the table again with --export-format DYNAMODB_JSON", infile.ErrInvalid, dir)
	}
	return fmt.Errorf("%w: %s is an export in %s (outputFormat), which treeport cannot read; export the table again with --export-format DYNAMODB_JSON", infile.ErrInvalid, dir, format)
}

// exportDataFiles lists the data files of an export folder, in the order of
// its manifest, with what the manifest says of each (nil without one).
func exportDataFiles(dir string) ([]string, []exportFile, error) {
	dataDir := filepath.Join(dir, "data")
	manifest := filepath.Join(dir, manifestFiles)
	raw, err := infile.ReadSmall(manifest, infile.MaxManifestBytes)
	if errors.Is(err, os.ErrNotExist) {
		var files []string
		entries, err := os.ReadDir(dataDir)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s is not a DynamoDB export: it has no %s and no data directory (%v); pass the export's folder, AWSDynamoDB/<export id>, or a folder above it that holds one export", infile.ErrInvalid, dir, manifestFiles, err)
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() && (strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz")) {
				files = append(files, filepath.Join(dataDir, name))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, nil, fmt.Errorf("%w: %s has no data files (data/*.json.gz) and no %s", infile.ErrInvalid, dir, manifestFiles)
		}
		return files, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("importer: %w", err)
	}
	var files []string
	var checks []exportFile
	seen := map[string]string{}
	for i, line := range bytes.Split(raw, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", manifest, i+1)
		var entry struct {
			DataFileS3Key string `json:"dataFileS3Key"`
			ItemCount     *int64 `json:"itemCount"`
			MD5Checksum   string `json:"md5Checksum"`
		}
		if err := json.Unmarshal(line, &entry); err != nil || entry.DataFileS3Key == "" {
			return nil, nil, fmt.Errorf("%w: %s: want a JSON object with a dataFileS3Key; %s", infile.ErrInvalid, where, exportAdvice)
		}
		key := entry.DataFileS3Key
		if strings.HasSuffix(key, ".ion.gz") || strings.HasSuffix(key, ".ion") {
			return nil, nil, notDDBJSON(dir, "ION")
		}
		c := exportFile{where: fmt.Sprintf("%s:%d", manifestFiles, i+1), items: -1}
		if entry.ItemCount != nil {
			if *entry.ItemCount < 0 {
				return nil, nil, fmt.Errorf("%w: %s: itemCount %d is negative; %s", infile.ErrInvalid, where, *entry.ItemCount, exportAdvice)
			}
			c.items = *entry.ItemCount
		}
		if entry.MD5Checksum != "" {
			sum, err := base64.StdEncoding.DecodeString(entry.MD5Checksum)
			if err != nil || len(sum) != md5.Size {
				return nil, nil, fmt.Errorf("%w: %s: md5Checksum %q is not a base64 MD5; %s", infile.ErrInvalid, where, entry.MD5Checksum, exportAdvice)
			}
			c.md5 = sum
		}
		base := path.Base(key)
		if prev, dup := seen[base]; dup {
			return nil, nil, fmt.Errorf("%w: %s: data files %s and %s have the same name, so only one of them can be in data/; %s", infile.ErrInvalid, where, prev, key, exportAdvice)
		}
		seen[base] = key
		f := filepath.Join(dataDir, base)
		if _, err := os.Stat(f); err != nil {
			return nil, nil, fmt.Errorf("%w: %s names the data file %s, which is missing (%v): %s", infile.ErrInvalid, where, key, err, exportAdvice)
		}
		files = append(files, f)
		checks = append(checks, c)
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%w: %s names no data files; %s", infile.ErrInvalid, manifest, exportAdvice)
	}
	return files, checks, nil
}

// Reader reads DynamoDB items, one {"Item":{...}} a line, from a file or
// from the directory of an ExportTableToPointInTime, its files one after the
// other.
//
// Next returns the item with the data file and the 1-based line it is on,
// and io.EOF at the end. A *transform.RowError (with File and Line) is one
// bad line: the caller may call Next again to go on. Any other error ends
// the stream. Not safe for concurrent use; the caller closes it.
type Reader struct {
	files []string
	// checks, when not nil, holds what the export's manifest says of each
	// of files.
	checks []exportFile
	// summary, when not "", is the path of manifest-summary.json, and
	// total the number of items it counts.
	summary string
	total   int64
	open    func(path string) (*infile.Input, error)
	fi      int
	in      *infile.Input
	hashed  *md5Reader // the current file's bytes, on their way through MD5; nil when not checked
	r       *bufio.Reader
	file    string
	line    int
	items   int64 // the current file's items so far (its non-blank lines)
	read    int64 // the items of all files so far
	done    bool
}

// Next reads the next item; see Reader.
func (s *Reader) Next(ctx context.Context) (map[string]types.AttributeValue, string, int, error) {
	item, _, err := s.NextLine()
	return item, s.file, s.line, err
}

// NextLine is Next, for a caller that wants the line's bytes too (valid
// until the next call; nil when the line could not be read) and asks Pos
// where it is.
func (s *Reader) NextLine() (map[string]types.AttributeValue, []byte, error) {
	for !s.done {
		if s.in == nil {
			if s.fi >= len(s.files) {
				s.done = true
				if s.summary != "" && s.read != s.total {
					return nil, nil, fmt.Errorf("%w: %s counts %d items, but the data files hold %d: %s", infile.ErrInvalid, s.summary, s.total, s.read, exportAdvice)
				}
				break
			}
			var in *infile.Input
			var err error
			if s.checks != nil && s.checks[s.fi].md5 != nil {
				in, s.hashed, err = openMD5(s.files[s.fi])
			} else {
				in, err = s.open(s.files[s.fi])
			}
			if err != nil {
				s.done = true
				return nil, nil, err
			}
			s.in, s.r, s.file, s.line, s.items = in, in.R, s.files[s.fi], 0, 0
			s.fi++
		}
		line, err := readLine(s.r)
		if err == errLineTooLong {
			s.line++
			s.items++
			s.read++
			return nil, nil, &transform.RowError{File: s.file, Line: s.line, Err: infile.Parsef("the line is longer than %s, the limit of one record (no DynamoDB item is over 400 KB); it is skipped", infile.LimitText(infile.MaxRecordBytes))}
		}
		if len(line) > 0 {
			s.line++
			// Only the end is trimmed, so that columns in errors count
			// from the start of the line.
			text := bytes.TrimRight(line, " \t\r\n")
			if len(bytes.TrimSpace(text)) == 0 {
				continue
			}
			s.items++
			s.read++
			item, derr := ddbjson.DecodeLine(text)
			if derr != nil {
				return nil, text, &transform.RowError{File: s.file, Line: s.line, Err: infile.Parsef("%s", ddbErr(derr))}
			}
			return item, text, nil
		}
		if err == io.EOF {
			verr := s.checkFile()
			cerr := s.in.Close()
			s.in, s.hashed = nil, nil
			if verr != nil {
				s.done = true
				return nil, nil, verr
			}
			if cerr != nil {
				s.done = true
				return nil, nil, fmt.Errorf("importer: closing %s: %w", s.file, cerr)
			}
			continue
		}
		if err != nil {
			s.done = true
			// A file that cannot be decompressed is most likely one
			// that is not the file the manifest names: say so, when its
			// MD5 tells.
			var ce *infile.CorruptError
			if errors.As(err, &ce) {
				if verr := s.checkMD5(); verr != nil {
					return nil, nil, verr
				}
			}
			return nil, nil, infile.NextError(err, s.file, s.line+1, "")
		}
	}
	return nil, nil, io.EOF
}

// checkFile checks the file just read to its end against its manifest line:
// its MD5, then its number of items.
func (s *Reader) checkFile() error {
	if s.checks == nil {
		return nil
	}
	if err := s.checkMD5(); err != nil {
		return err
	}
	c := s.checks[s.fi-1]
	if c.items >= 0 && s.items != c.items {
		return fmt.Errorf("%w: %s holds %s, but %s says %d: %s", infile.ErrInvalid, s.file, countItems(s.items), c.where, c.items, exportAdvice)
	}
	return nil
}

// checkMD5 reads what is left of the current file through its MD5, and
// compares the sum with the manifest's.
func (s *Reader) checkMD5() error {
	if s.hashed == nil {
		return nil
	}
	if _, err := io.Copy(io.Discard, s.hashed); err != nil {
		return fmt.Errorf("importer: reading %s: %w", s.file, err)
	}
	c := s.checks[s.fi-1]
	if got := s.hashed.h.Sum(nil); !bytes.Equal(got, c.md5) {
		return fmt.Errorf("%w: %s has the MD5 %s, but %s says %s: the file changed or was cut short, so %s", infile.ErrInvalid, s.file,
			base64.StdEncoding.EncodeToString(got), c.where, base64.StdEncoding.EncodeToString(c.md5), exportAdvice)
	}
	return nil
}

func countItems(n int64) string {
	if n == 1 {
		return "1 item"
	}
	return fmt.Sprintf("%d items", n)
}

// md5Reader passes a file's bytes through an MD5 as they are read.
type md5Reader struct {
	r io.Reader
	h hash.Hash
}

func (r *md5Reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	return n, err
}

// openMD5 is infile.Open, with the file's bytes (compressed, as stored)
// passed through an MD5 on their way in.
func openMD5(path string) (*infile.Input, *md5Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("importer: %w", err)
	}
	hashed := &md5Reader{r: infile.FileReader(f), h: md5.New()}
	in, err := infile.New(hashed, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	in.OnClose(f.Close)
	return in, hashed, nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line, with its '\n'. At the end of the input it
// returns the last line, if any, and io.EOF the next time. A line over
// infile.MaxRecordBytes is skipped, and errLineTooLong returned.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = r.ReadSlice('\n')
			if len(long) <= infile.MaxRecordBytes {
				long = infile.AppendGrow(long, line)
			}
		}
		if len(long) > infile.MaxRecordBytes && (err == nil || err == io.EOF) {
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

// Pos is the file and the 1-based line of the item NextLine read last.
func (s *Reader) Pos() (file string, line int) { return s.file, s.line }

// Count is the number of items the export's manifest-summary.json counts,
// 0 when there is none.
func (s *Reader) Count() int64 {
	if s.summary == "" {
		return 0
	}
	return s.total
}

// NewReader reads the DynamoDB JSON items of r, the file called name (for
// messages), compressed or not, as Open reads a file. Closing the Reader
// does not close r.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{files: []string{name}, open: func(string) (*infile.Input, error) { return infile.New(r, name) }}
}

// Close closes the file being read.
func (s *Reader) Close() error {
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
