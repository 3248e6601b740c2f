package exporter

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/treeport/treeport/internal/ddbjson"
)

// fastScanDecoding has a Scan's successful response decoded by
// decodeScanOutput rather than by the SDK, for one call. A scan's client
// spends most of its CPU decoding pages, and the SDK's general,
// schema-driven decoder takes more than twice as long per item, with more
// than twice the allocations (benchmarks/EXPORT.md); when the client shares
// its CPUs with the engine (DynamoDB Local) or other work, that CPU is
// throughput.
//
// Anything else goes to the SDK's protocol as before: the requests, the
// error responses (throttling, validation) and any body decodeScanOutput
// does not know in every detail, which the SDK decodes from the same bytes.
func fastScanDecoding(o *dynamodb.Options) {
	if o.Protocol != nil {
		o.Protocol = scanProtocol{o.Protocol}
	}
}

// scanDecoding is the option every Scan of the package is made with; a
// test sets it to a no-op to measure the SDK's own decoding.
var scanDecoding = fastScanDecoding

// scanProtocol is the SDK's protocol but for the decoding of successful
// Scan responses.
type scanProtocol struct {
	smithyhttp.ClientProtocol
}

// bodies holds buffers for response bodies; a page is up to 1 MB of JSON,
// and nothing decoded refers to it.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (p scanProtocol) DeserializeResponse(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry, resp *smithyhttp.Response, out smithy.Deserializable) error {
	so, ok := out.(*dynamodb.ScanOutput)
	if !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	}
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	defer bodies.Put(buf)
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return &smithy.DeserializationError{Err: err}
	}
	if decodeScanOutput(buf.Bytes(), so) {
		return nil
	}
	*so = dynamodb.ScanOutput{}
	// The SDK reads the bytes again; the caller still closes the original
	// body, which lets the connection be reused.
	body := resp.Body
	resp.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	defer func() { resp.Body = body }()
	return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
}

// decodeScanOutput decodes the JSON body of a successful Scan response
// into out: Items, Count, ScannedCount, LastEvaluatedKey and a
// ConsumedCapacity of the table's total. It returns false, leaving out
// half-filled, for anything else (another key, the per-index capacity of
// ReturnConsumedCapacity INDEXES, a value it does not decode exactly as the
// SDK would, such as a lone surrogate escape), which the caller then has
// the SDK decode. Strings are copied: nothing refers to body afterwards.
func decodeScanOutput(body []byte, out *dynamodb.ScanOutput) bool {
	d := scanDecoder{b: body, strs: ddbjson.StringReader{StrictSurrogates: true}, itemr: ddbjson.NewItemReader(slabSize)}
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "Items":
			return d.items(out)
		case "Count":
			n, ok := d.int32()
			out.Count = n
			return ok
		case "ScannedCount":
			n, ok := d.int32()
			out.ScannedCount = n
			return ok
		case "LastEvaluatedKey":
			item, ok := d.item()
			out.LastEvaluatedKey = item
			return ok
		case "ConsumedCapacity":
			out.ConsumedCapacity = &types.ConsumedCapacity{}
			return d.consumed(out.ConsumedCapacity)
		}
		return false
	})
	d.space()
	return ok && d.pos == len(d.b)
}

// scanDecoder reads a Scan response. It is written for speed, since a
// scan's client spends most of its time here: the items are read by
// internal/ddbjson's ItemReader (names interned, maps made at their size,
// the members of S and N values from a slab), and the response around them
// here. Strings are read strict about lone surrogates, and anything the
// readers refuse is left to the SDK.
type scanDecoder struct {
	b   []byte
	pos int

	strs  ddbjson.StringReader
	itemr *ddbjson.ItemReader
}

// slabSize is how many S or N members one allocation holds: a retained
// value keeps at most this many others' memory alive.
const slabSize = 64

func (d *scanDecoder) space() {
	for d.pos < len(d.b) {
		switch d.b[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// next skips blank space and reports whether the next byte is c, taking it
// if so.
func (d *scanDecoder) next(c byte) bool {
	d.space()
	if d.pos < len(d.b) && d.b[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// object reads an object, calling member for each key with the decoder on
// its value.
func (d *scanDecoder) object(member func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		d.space()
		key, ok := d.rawString()
		if !ok || !d.next(':') {
			return false
		}
		d.space()
		if !member(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// number returns the text of a JSON number.
func (d *scanDecoder) number() ([]byte, bool) {
	start := d.pos
	for d.pos < len(d.b) {
		c := d.b[d.pos]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.pos++
			continue
		}
		break
	}
	s := d.b[start:d.pos]
	return s, ddbjson.IsJSONNumber(string(s))
}

func (d *scanDecoder) int32() (int32, bool) {
	s, ok := d.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s), 10, 32)
	return int32(n), err == nil
}

func (d *scanDecoder) float() (*float64, bool) {
	s, ok := d.number()
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	return &f, err == nil
}

// items reads the array of items.
func (d *scanDecoder) items(out *dynamodb.ScanOutput) bool {
	if !d.next('[') {
		return false
	}
	out.Items = make([]map[string]types.AttributeValue, 0, 64)
	if d.next(']') {
		return true
	}
	for {
		d.space()
		item, ok := d.item()
		if !ok {
			return false
		}
		out.Items = append(out.Items, item)
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// item reads an item object (an item of the page, or its
// LastEvaluatedKey).
func (d *scanDecoder) item() (map[string]types.AttributeValue, bool) {
	m, end, err := d.itemr.Item(d.b, d.pos)
	d.pos = end
	return m, err == nil
}

// str reads a JSON string as a Go string.
func (d *scanDecoder) str() (string, bool) {
	raw, ok := d.rawString()
	return string(raw), ok
}

// rawString reads a JSON string. The bytes returned alias the body or the
// decoder's scratch space, until the next call.
func (d *scanDecoder) rawString() ([]byte, bool) {
	text, end, fault := d.strs.Read(d.b, d.pos)
	d.pos = end
	return text, fault == ddbjson.StringOK
}

// consumed reads a ConsumedCapacity of the table's total; the per-index
// breakdown is left to the SDK.
func (d *scanDecoder) consumed(cc *types.ConsumedCapacity) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "TableName":
			var name string
			name, ok = d.str()
			cc.TableName = &name
		case "CapacityUnits":
			cc.CapacityUnits, ok = d.float()
		case "ReadCapacityUnits":
			cc.ReadCapacityUnits, ok = d.float()
		case "WriteCapacityUnits":
			cc.WriteCapacityUnits, ok = d.float()
		}
		return ok
	})
}
