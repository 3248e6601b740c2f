// Package importfiles writes, describes and uploads the files DynamoDB's
// import from S3 reads (SPEC §6): gzip DynamoDB JSON, one {"Item":…} a
// line (FileSink), in a spread order for a bulk put (LineSpreader), the
// manifest that describes a directory of them (Manifest), their upload to S3
// with the manifest last (UploadImportFiles), and the search for every
// shard's manifest that says the files are complete (ShardsUploaded). What
// items go into them is the importer's; this package knows items only.
package importfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
)

// FileSinkOptions configure the import-file writer.
type FileSinkOptions struct {
	// Dir receives data/part-NNNNN.json.gz. It must not exist or be empty.
	Dir string
	// ItemsPerFile splits the output by item count (default 1,000,000).
	ItemsPerFile int
	// Level is the gzip level, 1 (fastest) to 9 (smallest); 0 means
	// DefaultFileLevel, and gzip.DefaultCompression the library's default.
	Level int
	// Prefix names the data files (default "part").
	Prefix string
}

// DefaultFileLevel is the import files' gzip level. ImportTable bills the
// uncompressed size, so compressing harder only saves S3 storage for the
// time the files are kept. Level 5 takes about a quarter more time than 3
// for files a tenth smaller (benchmarks/README.md).
const DefaultFileLevel = 3

// DataFile is one written file of items.
type DataFile struct {
	Name   string `json:"name"` // relative to the directory, with forward slashes
	Items  int64  `json:"items"`
	Bytes  int64  `json:"bytes"`  // compressed
	Raw    int64  `json:"raw"`    // uncompressed: what ImportTable bills
	SHA256 string `json:"sha256"` // of the compressed file
}

// FileSink writes items as gzip DynamoDB JSON, the format DynamoDB's import
// from S3 reads, one {"Item":…} a line, split into files of ItemsPerFile
// items in the order they come (the last file holds the rest).
//
// Write only gathers items into batches: each file has a goroutine that
// encodes them and one that compresses and writes, so a caller building
// items, the encoder and the compressor keep two cores busy. When a file is
// full, the next one starts while the last one finishes, two at most.
//
// Write keeps the item until it is written: the caller must not change it
// afterwards. A FileSink is not safe for concurrent use; the caller must
// Close it.
type FileSink struct {
	opts   FileSinkOptions
	batch  []layouts.Item
	cur    *fileWriter // the file being filled; nil before the first item and after a file is full
	files  []DataFile
	items  int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	failed atomic.Bool
	slots  chan struct{}       // a file takes one while it is written: two at most
	free   chan []layouts.Item // batches handed back by the encoders
	// mode is how items come: by Write (modeItems) or by WriteAttrs
	// (modeAttrs), never both; 0 before the first item.
	mode int
	// text is WriteAttrs' chunk of encoded items for the current file.
	text []byte
}

// The ways items come to a FileSink.
const (
	modeItems = 1 + iota
	modeAttrs
)

// ErrSinkMixed is returned when one FileSink is given items by both Write
// and WriteAttrs.
var ErrSinkMixed = errors.New("importfiles: a file sink takes items by Write or by WriteAttrs, not both")

// batchSize is how many items go to a file's encoder at a time.
const batchSize = 512

// fileQueue is how many batches, and how many chunks of encoded text,
// wait for a file's encoder and compressor.
const fileQueue = 4

// chunkSize is how much encoded text goes to the compressor at a time.
const chunkSize = 256 << 10

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, chunkSize+64<<10); return &b }}

// ErrOutputNotEmpty is returned when the output directory already has files.
var ErrOutputNotEmpty = errors.New("importfiles: output directory is not empty")

// CheckOutputDir reports whether dir can receive import files: it must not
// exist, or be empty. Call it before validating a large input, so that a
// bad --out fails at once.
func CheckOutputDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: %s (choose a new directory, or remove it first)", ErrOutputNotEmpty, dir)
	}
	return nil
}

// NewFileSink creates the output directory and returns the sink.
func NewFileSink(opts FileSinkOptions) (*FileSink, error) {
	if opts.ItemsPerFile <= 0 {
		opts.ItemsPerFile = 1_000_000
	}
	if opts.Level == 0 {
		opts.Level = DefaultFileLevel
	}
	if opts.Level != gzip.DefaultCompression && (opts.Level < gzip.BestSpeed || opts.Level > gzip.BestCompression) {
		return nil, fmt.Errorf("importfiles: gzip level %d: want 1 (fastest) to 9 (smallest)", opts.Level)
	}
	if opts.Prefix == "" {
		opts.Prefix = "part"
	}
	if err := CheckOutputDir(opts.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "data"), 0o755); err != nil {
		return nil, err
	}
	return &FileSink{
		opts:  opts,
		slots: make(chan struct{}, 2),
		// Enough for two files' queues and the batch being filled.
		free: make(chan []layouts.Item, 2*(fileQueue+1)+1),
	}, nil
}

// Write adds one item. It returns the first error of writing any file.
func (s *FileSink) Write(item layouts.Item) error {
	if s.mode != modeItems {
		if s.mode != 0 {
			return ErrSinkMixed
		}
		s.mode = modeItems
	}
	if s.batch == nil {
		select {
		case s.batch = <-s.free:
		default:
			s.batch = make([]layouts.Item, 0, batchSize)
		}
	}
	s.batch = append(s.batch, item)
	s.items++
	room := batchSize
	if s.cur != nil {
		room = min(room, s.opts.ItemsPerFile-int(s.cur.items))
	} else {
		room = min(room, s.opts.ItemsPerFile)
	}
	if len(s.batch) >= room {
		if err := s.flush(); err != nil {
			return err
		}
	}
	if s.failed.Load() {
		return s.firstErr()
	}
	return nil
}

// WriteAttrs adds one item given as attributes, as Layout.AppendItems
// builds it. The item is encoded before WriteAttrs returns, so the caller
// may reuse its memory at once; the encoding is the same as Write's. The
// encoded text goes to the file's compressor a chunk at a time, so the
// caller encodes while the compressor works. A sink takes its items either
// by Write or by WriteAttrs. It returns the first error of writing any file.
func (s *FileSink) WriteAttrs(item []layouts.Attr) error {
	if err := s.startText(); err != nil {
		return err
	}
	s.text = AppendAttrsLine(s.text, item)
	return s.endText()
}

// WriteLine adds one item already encoded by AppendAttrsLine, as
// WriteAttrs would have: the two are one way of giving items.
func (s *FileSink) WriteLine(line []byte) error {
	if err := s.startText(); err != nil {
		return err
	}
	s.text = append(s.text, line...)
	return s.endText()
}

// startText readies the current file's text for one more item.
func (s *FileSink) startText() error {
	if s.mode != modeAttrs {
		if s.mode != 0 {
			return ErrSinkMixed
		}
		s.mode = modeAttrs
	}
	if s.cur == nil {
		fw, err := s.openFile(false)
		if err != nil {
			return err
		}
		s.cur = fw
		s.text = (*chunkPool.Get().(*[]byte))[:0]
	}
	return nil
}

// endText counts the item just appended to the text, and hands the text
// on when the file or the chunk is full.
func (s *FileSink) endText() error {
	s.items++
	s.cur.items++
	if s.cur.items >= int64(s.opts.ItemsPerFile) {
		s.endAttrsFile()
	} else if len(s.text) >= chunkSize {
		s.cur.chunks <- s.text
		s.text = (*chunkPool.Get().(*[]byte))[:0]
	}
	if s.failed.Load() {
		return s.firstErr()
	}
	return nil
}

// endAttrsFile hands the last chunk of the current file to its compressor
// and closes the file's queue.
func (s *FileSink) endAttrsFile() {
	fw := s.cur
	if t := s.text; len(t) > 0 {
		fw.chunks <- t
	} else {
		chunkPool.Put(&t)
	}
	s.text = nil
	fw.encoded = fw.items // read by the compressor once chunks is closed
	close(fw.chunks)
	s.cur = nil
}

// flush hands the batch to the current file, opening it first if need be,
// and finishes the file when it is full.
func (s *FileSink) flush() error {
	if len(s.batch) == 0 {
		return nil
	}
	if s.cur == nil {
		fw, err := s.openFile(true)
		if err != nil {
			return err
		}
		s.cur = fw
	}
	s.cur.items += int64(len(s.batch))
	s.cur.batches <- s.batch
	s.batch = nil
	if s.cur.items >= int64(s.opts.ItemsPerFile) {
		close(s.cur.batches)
		s.cur = nil
	}
	return nil
}

func (s *FileSink) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *FileSink) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.failed.Store(true)
}

// openFile starts the next file: its compressor, and with encoder, an
// encoder of the batches Write gathers (WriteAttrs encodes on the caller).
func (s *FileSink) openFile(encoder bool) (*fileWriter, error) {
	s.slots <- struct{}{}
	s.mu.Lock()
	idx := len(s.files)
	s.mu.Unlock()
	name := fmt.Sprintf("data/%s-%05d.json.gz", s.opts.Prefix, idx)
	f, err := statefile.CreateOutput(filepath.Join(s.opts.Dir, filepath.FromSlash(name)))
	if err != nil {
		<-s.slots
		return nil, err
	}
	fw := &fileWriter{
		name: name, f: f, idx: idx,
		batches: make(chan []layouts.Item, fileQueue),
		chunks:  make(chan []byte, fileQueue),
	}
	s.mu.Lock() // the writers of earlier files fill in their entries
	s.files = append(s.files, DataFile{Name: name})
	s.mu.Unlock()
	if encoder {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			fw.encode(s.free)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		df, err := fw.compress(s.opts.Level)
		if err != nil {
			s.setErr(fmt.Errorf("importfiles: writing %s: %w", name, err))
		}
		s.mu.Lock()
		s.files[fw.idx] = df
		s.mu.Unlock()
	}()
	return fw, nil
}

// Close finishes the last file and waits for every file to be written and
// synced. It returns the files in order.
func (s *FileSink) Close() ([]DataFile, error) {
	var err error
	if s.mode == modeAttrs {
		if s.cur != nil {
			s.endAttrsFile()
		}
	} else {
		err = s.flush()
		if s.cur != nil {
			close(s.cur.batches)
			s.cur = nil
		}
	}
	s.wg.Wait()
	if err != nil {
		return nil, err
	}
	if err := s.firstErr(); err != nil {
		return nil, err
	}
	return append([]DataFile(nil), s.files...), nil
}

// Items is how many items were written.
func (s *FileSink) Items() int64 { return s.items }

// fileWriter is one data file: batches of items go to its encoder, chunks
// of encoded text from there to its compressor.
type fileWriter struct {
	name    string
	f       *os.File
	idx     int
	batches chan []layouts.Item // nil for a file WriteAttrs encodes
	chunks  chan []byte
	items   int64 // items handed to batches or encoded by WriteAttrs; touched only by the producer
	encoded int64 // items encoded; the compressor reads it once chunks is closed
}

// encode turns batches into chunks of DynamoDB JSON lines until batches is
// closed, handing each batch back on free, then closes chunks.
func (fw *fileWriter) encode(free chan<- []layouts.Item) {
	buf := (*chunkPool.Get().(*[]byte))[:0]
	for batch := range fw.batches {
		for _, item := range batch {
			buf = ddbjson.AppendLine(buf, item)
			if len(buf) >= chunkSize {
				fw.chunks <- buf
				buf = (*chunkPool.Get().(*[]byte))[:0]
			}
		}
		fw.encoded += int64(len(batch))
		clear(batch)
		select {
		case free <- batch[:0]:
		default:
		}
	}
	if len(buf) > 0 {
		fw.chunks <- buf
	}
	close(fw.chunks)
}

// compress writes the chunks through gzip until chunks is closed, then
// syncs and closes the file. After an error it still drains chunks, so that
// the encoder never blocks.
func (fw *fileWriter) compress(level int) (DataFile, error) {
	df := DataFile{Name: fw.name}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(fw.f, h)}
	zw, werr := gzip.NewWriterLevel(cw, level)
	for chunk := range fw.chunks {
		if werr == nil {
			df.Raw += int64(len(chunk))
			_, werr = zw.Write(chunk)
		}
		chunk = chunk[:0]
		chunkPool.Put(&chunk)
	}
	df.Items = fw.encoded
	if werr == nil {
		werr = zw.Close()
	}
	if werr == nil {
		werr = fw.f.Sync()
	}
	if err := fw.f.Close(); werr == nil {
		werr = err
	}
	df.Bytes = cw.n
	df.SHA256 = hex.EncodeToString(h.Sum(nil))
	return df, werr
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// AppendAttrsLine appends the item as ddbjson.AppendLine writes it: one
// {"Item":{...}} line, the attributes in name order.
func AppendAttrsLine(dst []byte, item []layouts.Attr) []byte {
	// Sort a copy on the stack: an item has a handful of attributes.
	var buf [16]layouts.Attr
	attrs := append(buf[:0], item...)
	if len(attrs) > len(buf) {
		slices.SortFunc(attrs, func(a, b layouts.Attr) int { return strings.Compare(a.Name, b.Name) })
	} else {
		for i := 1; i < len(attrs); i++ {
			for j := i; j > 0 && attrs[j].Name < attrs[j-1].Name; j-- {
				attrs[j], attrs[j-1] = attrs[j-1], attrs[j]
			}
		}
	}
	dst = append(dst, `{"Item":{`...)
	for i, a := range attrs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = ddbjson.AppendString(dst, a.Name)
		dst = append(dst, ':')
		dst = ddbjson.AppendValue(dst, a.Value)
	}
	return append(dst, '}', '}', '\n')
}

// Manifest describes a directory of import files.
type Manifest struct {
	Tool     string         `json:"tool"`
	Created  string         `json:"created"`
	Layout   string         `json:"layout"`
	Table    string         `json:"table"`
	Input    string         `json:"input"`
	Settings map[string]any `json:"settings"`
	Shard    string         `json:"shard,omitempty"`
	Nodes    int64          `json:"nodes"`
	Items    int64          `json:"items"`
	Rejected int64          `json:"rejected_records"`
	Bytes    int64          `json:"bytes"`
	RawBytes int64          `json:"uncompressed_bytes"`
	Files    []DataFile     `json:"files"`
	Format   string         `json:"format"`
	Comp     string         `json:"compression"`
}

// WriteFile writes data to path through a temporary file renamed over it,
// made with O_EXCL (never through a link planted at a fixed name) and with
// the mode of a plain create, or of the file it replaces.
func WriteFile(path string, data []byte) error {
	f, err := statefile.CreateTempFor(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
