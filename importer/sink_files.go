package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
)

// FileSinkOptions configure the import-file writer.
type FileSinkOptions struct {
	// Dir receives data/part-NNNNN.json.gz. It must not exist or be empty.
	Dir string
	// ItemsPerFile splits the output by item count (default 1,000,000).
	ItemsPerFile int
	// Level is the gzip level (default gzip.DefaultCompression).
	Level int
	// Prefix names the data files (default "part").
	Prefix string
}

// DataFile is one written file of items.
type DataFile struct {
	Name   string `json:"name"` // relative to the directory, with forward slashes
	Items  int64  `json:"items"`
	Bytes  int64  `json:"bytes"`  // compressed
	Raw    int64  `json:"raw"`    // uncompressed: what ImportTable bills
	SHA256 string `json:"sha256"` // of the compressed file
}

// FileSink writes items as gzip DynamoDB JSON, the format DynamoDB's import
// from S3 reads, one {"Item":…} a line, split into files by item count.
// Encoding runs in the caller's goroutine and compression in one goroutine a
// file, so two files compress at once when one is slower than encoding.
// It is not safe for concurrent use; the caller must Close it.
type FileSink struct {
	opts  FileSinkOptions
	buf   []byte
	cur   *fileWriter
	files []DataFile
	items int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
	slots chan struct{}
}

// chunkSize is how much encoded text goes to a compressor at a time.
const chunkSize = 256 << 10

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, chunkSize+64<<10); return &b }}

// ErrOutputNotEmpty is returned when the output directory already has files.
var ErrOutputNotEmpty = errors.New("importer: output directory is not empty")

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
		opts.Level = gzip.DefaultCompression
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
	return &FileSink{opts: opts, slots: make(chan struct{}, 2)}, nil
}

// Write adds one item.
func (s *FileSink) Write(item layouts.Item) error {
	if s.cur == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	if s.buf == nil {
		s.buf = (*chunkPool.Get().(*[]byte))[:0]
	}
	s.buf = ddbjson.AppendLine(s.buf, item)
	s.cur.items++
	s.items++
	if len(s.buf) >= chunkSize {
		s.cur.ch <- s.buf
		s.buf = nil
	}
	if s.cur.items >= int64(s.opts.ItemsPerFile) {
		s.finishFile()
	}
	return s.failed()
}

func (s *FileSink) failed() error {
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
}

func (s *FileSink) open() error {
	s.slots <- struct{}{} // at most two files compress at once
	name := fmt.Sprintf("data/%s-%05d.json.gz", s.opts.Prefix, len(s.files))
	f, err := os.Create(filepath.Join(s.opts.Dir, filepath.FromSlash(name)))
	if err != nil {
		<-s.slots
		return err
	}
	fw := &fileWriter{name: name, f: f, ch: make(chan []byte, 8), idx: len(s.files)}
	s.files = append(s.files, DataFile{Name: name})
	s.cur = fw
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.slots }()
		df, err := fw.run(s.opts.Level)
		if err != nil {
			s.setErr(fmt.Errorf("importer: writing %s: %w", name, err))
		}
		s.mu.Lock()
		s.files[fw.idx] = df
		s.mu.Unlock()
	}()
	return nil
}

func (s *FileSink) finishFile() {
	if s.cur == nil {
		return
	}
	if len(s.buf) > 0 {
		s.cur.ch <- s.buf
		s.buf = nil
	}
	s.cur.itemsFinal = s.cur.items
	close(s.cur.ch)
	s.cur = nil
}

// Close finishes the last file and waits for every file to be written and
// synced. It returns the files in order.
func (s *FileSink) Close() ([]DataFile, error) {
	s.finishFile()
	s.wg.Wait()
	if err := s.failed(); err != nil {
		return nil, err
	}
	return append([]DataFile(nil), s.files...), nil
}

// Items is how many items were written.
func (s *FileSink) Items() int64 { return s.items }

type fileWriter struct {
	name       string
	f          *os.File
	ch         chan []byte
	idx        int
	items      int64 // touched only by the producer
	itemsFinal int64 // set before ch is closed
}

func (fw *fileWriter) run(level int) (DataFile, error) {
	df := DataFile{Name: fw.name}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(fw.f, h)}
	zw, err := gzip.NewWriterLevel(cw, level)
	var werr error
	if err != nil {
		werr = err
	}
	for chunk := range fw.ch {
		if werr == nil {
			df.Raw += int64(len(chunk))
			_, werr = zw.Write(chunk)
		}
		chunk = chunk[:0]
		chunkPool.Put(&chunk)
	}
	if werr == nil {
		werr = zw.Close()
	}
	if werr == nil {
		werr = fw.f.Sync()
	}
	if err := fw.f.Close(); werr == nil {
		werr = err
	}
	df.Items = fw.itemsFinal
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
