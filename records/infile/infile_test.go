package infile

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// zstdFrame is data as one zstd frame whose header asks for a window of
// 1<<windowLog bytes (a Window_Descriptor, no content size: as zstd --long
// writes a stream), holding data as one raw block.
func zstdFrame(data []byte, windowLog int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3}
	h := 1 | len(data)<<3 // the last block, raw
	b = append(b, byte(h), byte(h>>8), byte(h>>16))
	return append(b, data...)
}

// TestZstdWindowLimit: a zstd frame that asks for a window over
// MaxZstdWindow, which the decoder would hold in memory, is refused as
// invalid input that says the limit and what to do; one within it reads.
func TestZstdWindowLimit(t *testing.T) {
	data := []byte("id,parent_id\na,\n")
	for _, tc := range []struct {
		windowLog int
		ok        bool
	}{{25, true}, {26, false}, {27, false}, {30, false}} {
		in, err := New(bytes.NewReader(zstdFrame(data, tc.windowLog)), "in.csv.zst")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(in.R)
		in.Close()
		if tc.ok {
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("window 2^%d: read %q, %v; want %q", tc.windowLog, got, err, data)
			}
			continue
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "32 MiB") || !strings.Contains(err.Error(), "without --long") {
			t.Errorf("window 2^%d: %v; want a CorruptError naming the 32 MiB limit and what to do", tc.windowLog, err)
		}
	}
}

// TestBrokenHeaderIsInvalid: data whose first bytes say gzip or zstd but
// whose header is broken is invalid input (exit 2), not a failure to read
// it: an export's data file so broken once made export --in exit 3
// (FuzzExportDir found it).
func TestBrokenHeaderIsInvalid(t *testing.T) {
	for _, data := range []string{"\x1f\x8b0", "\x1f\x8b\x08\x00"} {
		_, err := New(strings.NewReader(data), "part-0.json.gz")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "part-0.json.gz looks gzip-compressed") {
			t.Errorf("New(%q) = %v; want invalid input naming the file", data, err)
		}
	}
}
