package records

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compress returns a writer that compresses what is written to it into w as
// the name path asks (CompressionFromPath: gzip for .gz, zstd for
// .zst or .zstd). Its Close writes the compressed stream's end into w and
// does not close w; for a name that asks for no compression it writes
// straight through, and Close does nothing.
func Compress(w io.Writer, path string) (io.WriteCloser, error) {
	switch CompressionFromPath(path) {
	case Gzip:
		return gzip.NewWriter(w), nil
	case Zstd:
		return zstd.NewWriter(w)
	}
	return nopCloser{w}, nil
}

// CheckCompression says whether a file of format can be written compressed
// as the name path asks. Parquet cannot: it compresses its own columns, and
// its reader needs random access, which a compressed stream does not give.
func CheckCompression(path, format string) error {
	if format == FormatParquet && CompressionFromPath(path) != Uncompressed {
		return fmt.Errorf("%s: a Parquet file compresses its columns itself (zstd) and is read with random access, so it is not compressed whole: name it %s", path, strings.TrimSuffix(path, filepath.Ext(path)))
	}
	return nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
