package records

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// Checking what a page's compressed data decodes to.
//
// parquet-go sizes the buffer a page is decoded into by the size its header
// declares, but grows it for as long as the data goes on (gzip, brotli and
// LZ4 by doubling it; zstd by the content size its frame declares): a page
// of a megabyte can so decode to gigabytes, whatever its header says. So
// before a row group is read, each compressed page is decoded here as a
// stream, into nothing, and refused when it decodes to more than its header
// declares; the declarations are what checkRowGroup holds to its budget.

// checkData decodes the data of the page whose header h ends at pos, in a
// column chunk compressed with codec, without keeping it, and refuses a page
// that decodes to more than its header declares, or that cannot be decoded.
func (s *parquetSource) checkData(codec format.CompressionCodec, h *format.PageHeader, pos int64) error {
	if h.Type != format.DataPage && h.Type != format.DataPageV2 && h.Type != format.DictionaryPage {
		return nil // parquet-go decodes no other page
	}
	comp, size := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid {
		// The levels come first, not compressed (checkPage checked that
		// they fit in the page).
		v := &h.DataPageHeaderV2.V
		if v.IsCompressed.Valid && !v.IsCompressed.V {
			return nil
		}
		levels := int64(v.RepetitionLevelsByteLength) + int64(v.DefinitionLevelsByteLength)
		pos, comp = pos+levels, comp-levels
	}
	data := io.NewSectionReader(s.r, pos, comp)
	var r io.Reader
	switch codec {
	case format.Snappy:
		// Snappy's data starts with its decoded length, which its decoder
		// allocates, and decodes to exactly that or fails.
		var b [binary.MaxVarintLen64]byte
		k, _ := io.ReadFull(data, b[:])
		n, m := binary.Uvarint(b[:k])
		if m <= 0 {
			return fmt.Errorf("the page at byte %d: its snappy data is corrupt", pos)
		}
		return overDeclared(pos, n, size)
	case format.Gzip:
		zr, err := gzip.NewReader(data)
		if err != nil {
			return fmt.Errorf("the page at byte %d: its gzip data is corrupt (%v)", pos, err)
		}
		defer zr.Close()
		r = zr
	case format.Zstd:
		zr, err := zstd.NewReader(data, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(pqMaxPage)), zstd.WithDecoderMaxWindow(uint64(pqMaxPage)))
		if err != nil {
			return err
		}
		defer zr.Close()
		r = zr
	case format.Brotli:
		r = brotli.NewReader(data)
	case format.Lz4Raw:
		// An LZ4 block is decoded whole: into the room the page declares
		// (at most pqMaxPage), which it fails to fit when it is more.
		src := make([]byte, comp)
		if _, err := io.ReadFull(data, src); err != nil {
			return fmt.Errorf("the page at byte %d: reading its data: %w", pos, err)
		}
		if _, err := lz4.UncompressBlock(src, make([]byte, size)); err != nil {
			return fmt.Errorf("the page at byte %d: its LZ4 data is corrupt or decodes to more than the %d bytes it declares", pos, size)
		}
		return nil
	default:
		// Not compressed, or a codec parquet-go does not read (it says so).
		return nil
	}
	n, err := io.Copy(io.Discard, io.LimitReader(r, size+1))
	if err != nil {
		if err == zstd.ErrDecoderSizeExceeded || err == zstd.ErrWindowSizeExceeded {
			return fmt.Errorf("the page at byte %d: its zstd data asks for a window of more than %s, the limit of a page", pos, byteSize(pqMaxPage))
		}
		return fmt.Errorf("the page at byte %d: its %s data is corrupt (%v)", pos, codec, err)
	}
	return overDeclared(pos, uint64(n), size)
}

// overDeclared refuses a page that decodes to n bytes when it declares size.
func overDeclared(pos int64, n uint64, size int64) error {
	if n > uint64(size) {
		return fmt.Errorf("the page at byte %d decodes to more than the %d bytes it declares", pos, size)
	}
	return nil
}
