// Package infile opens treeport's input files, gzip and zstd compressed or
// not, and words what goes wrong reading them: an error of the file itself
// (*ReadError), data that cannot be decompressed (*CorruptError, invalid
// input), a row that cannot be parsed (Parsef). The sources of records and
// the DynamoDB JSON item reader (records/ddbitems) share it.
package infile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/treeport/treeport/transform"
)

// ErrInvalid marks an error that says what is wrong with an input (or with
// the options that say how to read it), as opposed to a failure to read it.
// importer.ErrInvalid is this error.
var ErrInvalid = errors.New("importer: invalid input")

// The limits of every reader (docs/SECURITY.md, "Limits"). No DynamoDB item
// is over 400 KB, so no record that could be written comes near them; they
// are there so that hostile or broken input (a missing quote or bracket, a
// gigabyte in one field) costs bounded memory and is refused where it is.
const (
	// MaxRecordBytes bounds one record as it is in the input: a CSV
	// record's lines, a JSON object, a line of JSON Lines or of DynamoDB
	// JSON, a Parquet row's values. It is 40 times DynamoDB's item limit,
	// room for what text adds to an item's bytes (escapes, quotes,
	// DynamoDB JSON's type names, indentation).
	MaxRecordBytes = 16 << 20
	// MaxFieldBytes bounds one field: a CSV cell (its bytes once
	// unquoted), a Parquet value. A value over 400 KB never fits in an
	// item, so one over 1 MiB is refused as soon as it is read.
	MaxFieldBytes = 1 << 20
)

// CheckLimits holds a record's attributes to the limits every reader
// shares, as DynamoDB counts their sizes: a value over MaxFieldBytes, or
// names and values together over MaxRecordBytes. It returns their size and,
// past a limit, the problem at the record's place (file, line, unit: "row"
// for Parquet, "line" or "" for the others; id) naming the limit. Every
// path that reads an input's records goes through it (import, bench,
// schema, plan and apply's ReadInput; verify; export --in).
func CheckLimits(attrs transform.Attrs, file string, line int, unit, id string) (int, *transform.RowError) {
	size := 0
	for k, v := range attrs {
		n := transform.ValueSize(v)
		if n > MaxFieldBytes {
			return size, FieldOverLimit(file, line, unit, id, k, n)
		}
		size += len(k) + n
	}
	if size > MaxRecordBytes {
		return size, RecordOverLimit(file, line, unit, id, size)
	}
	return size, nil
}

// FieldOverLimit is the problem of a record whose attribute k's value is
// n bytes, over MaxFieldBytes, as DynamoDB counts its size.
func FieldOverLimit(file string, line int, unit, id, k string, n int) *transform.RowError {
	return &transform.RowError{File: file, Line: line, Unit: unit, ID: id, Err: Parsef(
		"attribute %q is %d bytes, over %s, the limit of one field (no DynamoDB item is over 400 KB)",
		k, n, LimitText(MaxFieldBytes))}
}

// RecordOverLimit is the problem of a record whose attributes are n bytes,
// over MaxRecordBytes.
func RecordOverLimit(file string, line int, unit, id string, n int) *transform.RowError {
	return &transform.RowError{File: file, Line: line, Unit: unit, ID: id, Err: Parsef(
		"the record's attributes are %d bytes, over %s, the limit of one record (no DynamoDB item is over 400 KB)",
		n, LimitText(MaxRecordBytes))}
}

// MaxManifestBytes bounds a manifest of a DynamoDB export
// (manifest-summary.json, manifest-files.json), which is read whole: a
// line of manifest-files.json is about 250 bytes, so this is room for a
// quarter of a million data files.
const MaxManifestBytes = 64 << 20

// ReadSmall reads the file at path whole, as os.ReadFile does, and refuses
// one over limit bytes (ErrInvalid) without reading more of it than that.
func ReadSmall(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: %s is over %s, the limit of a file treeport reads whole; it is not what it should be", ErrInvalid, path, LimitText(limit))
	}
	return b, nil
}

// AppendGrow is append, but doubles dst's room when it needs more, up to a
// record's limit and a read buffer: append grows a large slice by a
// quarter at a time, which allocates five times a record's bytes on the way
// to them.
func AppendGrow(dst, src []byte) []byte {
	if need := len(dst) + len(src); need > cap(dst) {
		c := max(need, min(2*cap(dst), MaxRecordBytes+ReadBufferSize))
		grown := make([]byte, len(dst), c)
		copy(grown, dst)
		dst = grown
	}
	return append(dst, src...)
}

// LimitText says a limit in words, for messages: "16 MiB".
func LimitText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// MaxZstdWindow bounds the window a zstd frame may ask the decoder for,
// which it holds in memory, whether the frame declares a window or (a
// single-segment frame) only its content size, which is then its window:
// zstd's levels up to 19 (8 MiB) and --ultra -20 (32 MiB) stay within it;
// --ultra -21 and -22 and --long are refused, and the message says to
// recompress.
const MaxZstdWindow = 32 << 20

// NewZstdReader is the zstd decoder of every zstd stream treeport reads: one
// goroutine, its window (and a single-segment frame's content) bounded by
// MaxZstdWindow.
func NewZstdReader(r io.Reader) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxZstdWindow), zstd.WithDecoderMaxWindow(MaxZstdWindow))
}

// Input is an opened input file, decompressed when it needs to be. The
// caller closes it.
type Input struct {
	R           *bufio.Reader // the (decompressed) bytes
	Compression string        // "", "gzip" or "zstd"
	closers     []func() error
}

// ReadBufferSize is the size of an Input's read buffer.
const ReadBufferSize = 256 << 10

// Open opens path and looks at its first bytes for gzip's or zstd's magic
// number. An error reading the file itself, then or later, is a *ReadError.
func Open(path string) (*Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	in, err := New(&fileReader{f}, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	in.OnClose(f.Close)
	return in, nil
}

// New reads r, the input called name (for messages), decompressed when its
// first bytes say gzip or zstd. Closing the Input does not close r.
func New(r io.Reader, name string) (*Input, error) {
	br := bufio.NewReaderSize(r, ReadBufferSize)
	magic, err := br.Peek(4)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("importer: reading %s: %w", name, err)
	}
	in := &Input{R: br}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, invalidError{fmt.Errorf("importer: %s looks gzip-compressed but its header is not: %w", name, err)}
		}
		in.R = bufio.NewReaderSize(&decompressReader{r: zr, format: "gzip"}, ReadBufferSize)
		in.Compression = "gzip"
		// The decompressor holds no resource but memory, and a complaint
		// about the data has already come out of Read.
		in.closers = append(in.closers, func() error { zr.Close(); return nil })
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := NewZstdReader(br)
		if err != nil {
			return nil, invalidError{fmt.Errorf("importer: %s looks zstd-compressed but cannot be read: %w", name, err)}
		}
		in.R = bufio.NewReaderSize(&decompressReader{r: zr, format: "zstd"}, ReadBufferSize)
		in.Compression = "zstd"
		in.closers = append(in.closers, func() error { zr.Close(); return nil })
	}
	return in, nil
}

// invalidError marks an error of New as ErrInvalid (errors.Is) and keeps
// its words: a data file of an export whose compressed header is broken is
// invalid input, exit 2, not a failure to read it (FuzzExportDir found it
// exit 3).
type invalidError struct{ error }

func (e invalidError) Is(target error) bool { return target == ErrInvalid }
func (e invalidError) Unwrap() error        { return e.error }

// OnClose adds f to what Close does, before what was added earlier.
func (in *Input) OnClose(f func() error) { in.closers = append(in.closers, f) }

// Close releases the decompressor and closes the file Open opened.
func (in *Input) Close() error {
	var errs []error
	for i := len(in.closers) - 1; i >= 0; i-- {
		errs = append(errs, in.closers[i]())
	}
	in.closers = nil
	return errors.Join(errs...)
}

// fileReader marks the errors of reading the file itself, so that they are
// told apart from corrupt compressed data.
type fileReader struct{ f *os.File }

// FileReader reads f, its errors (but io.EOF) as *ReadError, for a caller
// that passes a file's bytes through something (a checksum) before New.
func FileReader(f *os.File) io.Reader { return &fileReader{f} }

func (r *fileReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = &ReadError{err}
	}
	return n, err
}

// ReadError is an error reading the file itself (not its content).
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }

// Unwrap returns the file system's error.
func (e *ReadError) Unwrap() error { return e.Err }

// decompressReader turns a decompressor's complaints about its data into
// CorruptError, leaving errors reading the file as they are.
type decompressReader struct {
	r      io.Reader
	format string
}

func (r *decompressReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		var re *ReadError
		if !errors.As(err, &re) {
			err = &CorruptError{format: r.format, err: err}
		}
	}
	return n, err
}

// CorruptError is compressed input that cannot be decompressed: invalid
// input, not a failure to read it.
type CorruptError struct {
	format string
	err    error
}

func (e *CorruptError) Error() string {
	if errors.Is(e.err, zstd.ErrWindowSizeExceeded) || errors.Is(e.err, zstd.ErrDecoderSizeExceeded) {
		return fmt.Sprintf("the zstd data asks for a window of more than %s, treeport's limit (it was compressed with --long, --ultra -21 or -22, or as one segment of more than %s); recompress it with zstd -19 or less, without --long", LimitText(MaxZstdWindow), LimitText(MaxZstdWindow))
	}
	return fmt.Sprintf("the %s data is corrupt or cut short (%v); reading stops here", e.format, e.err)
}

// Unwrap returns the decompressor's error.
func (e *CorruptError) Unwrap() error { return e.err }

// NextError turns an error that ended a read into what a source's Next
// returns: a *transform.RowError at file and line for invalid input (corrupt
// compressed data), the error itself for a failure to read.
func NextError(err error, file string, line int, unit string) error {
	var ce *CorruptError
	if errors.As(err, &ce) {
		return &transform.RowError{File: file, Line: line, Unit: unit, Err: Parsef("%v", ce)}
	}
	var re *ReadError
	if errors.As(err, &re) {
		return fmt.Errorf("importer: reading %s: %w", file, re.Err)
	}
	return err
}

// parseError is a row that cannot be parsed. It matches transform.ErrParse
// with errors.Is, and says what is wrong without repeating that sentinel.
type parseError struct{ msg string }

func (e *parseError) Error() string        { return e.msg }
func (e *parseError) Is(target error) bool { return target == transform.ErrParse }

// Parsef is the error of a row that cannot be parsed, worded as format
// says (see parseError).
func Parsef(format string, args ...any) error {
	return &parseError{msg: fmt.Sprintf(format, args...)}
}
