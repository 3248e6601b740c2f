package records

import (
	"cmp"

	"github.com/treeport/treeport/transform"
)

// Encoder encodes one record apart from the file it goes in, so that
// records can be encoded as they are read, in several goroutines, and
// written later in their order by the format's EncodedWriter. It keeps
// scratch space between calls: each goroutine needs its own.
type Encoder interface {
	// Encode appends the record's bytes to dst. An error names the record
	// and the attribute at fault.
	Encode(dst []byte, rec *transform.Record) ([]byte, error)
}

// EncodedWriter is a Writer that also takes records its format's
// Encoder encoded, adding what their place in the file needs (the
// commas of a JSON array).
type EncodedWriter interface {
	Writer
	WriteEncoded(enc []byte) error
}

// EncoderFor returns a maker of encoders of opts.Format for the records
// NewWriter(w, opts) writes, or nil for the formats that must see every
// record before they write one (csv and parquet infer their columns).
func EncoderFor(opts WriterOptions) func() Encoder {
	opts.IDField = cmp.Or(opts.IDField, DefaultIDField)
	opts.ParentField = cmp.Or(opts.ParentField, DefaultParentField)
	switch opts.Format {
	case FormatJSON, FormatJSONL:
		return func() Encoder { return &jsonEncoder{opts: opts} }
	case FormatDDBJSON:
		return func() Encoder { return &ddbjsonEncoder{opts: opts} }
	}
	return nil
}
