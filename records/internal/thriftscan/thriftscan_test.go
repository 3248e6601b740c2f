package thriftscan

import (
	"bytes"
	"strings"
	"testing"
)

func TestThriftScan(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		err  string // "" for none
	}{
		{"empty struct", []byte{0x00}, ""},
		{"fields", []byte{0x15, 0x04, 0x18, 0x02, 'i', 'd', 0x16, 0x02, 0x11, 0x00}, ""},
		{"long field id", []byte{0x05, 0x14, 0x02, 0x00}, ""},
		{"booleans in a list", []byte{0x19, 0x21, 0x01, 0x02, 0x00}, ""},
		{"map", []byte{0x1b, 0x01, 0x88, 0x01, 'k', 0x01, 'v', 0x00}, ""},
		{"nested structs", append(bytes.Repeat([]byte{0x1c}, 64), bytes.Repeat([]byte{0x00}, 65)...), ""},
		{"string longer than the bytes", []byte{0x18, 0x05, 'a', 'b'}, "it declares a string of 5 bytes, and 2 bytes are left"},
		{"list longer than the bytes", []byte{0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00}, "it declares 2147483647 elements, and 1 bytes are left"},
		{"map longer than the bytes", []byte{0x1b, 0x05, 0x88, 0x00}, "it declares 5 elements, and 1 bytes are left"},
		{"too deep", bytes.Repeat([]byte{0x1c}, 100), "it nests more than 64 levels deep"},
		{"lists too deep", bytes.Repeat([]byte{0x19, 0x19}, 100), "it nests more than 64 levels deep"},
		{"unknown type", []byte{0x1e, 0x00}, "a value of unknown type 14"},
		{"cut short", []byte{0x15}, "it is cut short"},
		{"no stop", []byte{0x15, 0x02}, "it is cut short"},
		{"long varint", append([]byte{0x15}, bytes.Repeat([]byte{0xff}, 11)...), "a varint is longer than 10 bytes"},
		{"length over 2^31", []byte{0x18, 0x80, 0x80, 0x80, 0x80, 0x10}, "a length or count of 4294967296"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := thriftScan{b: tt.in, full: true}
			err := s.structure(0)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err == "" && s.off != len(tt.in):
				t.Fatalf("read %d bytes of %d", s.off, len(tt.in))
			case tt.err != "" && (err == nil || err.Error() != tt.err):
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			// With more bytes to read, running out asks for them.
			if tt.err == "it is cut short" || strings.Contains(tt.err, "bytes are left") {
				s := thriftScan{b: tt.in}
				if err := s.structure(0); err != ErrShort {
					t.Errorf("without all the bytes: %v, want ErrShort", err)
				}
			}
		})
	}
}
