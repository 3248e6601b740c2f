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
// decodeScanOutput rather than by the SDK, for one call. A scan spends most
// of its CPU decoding pages, and the SDK's general, schema-driven decoder
// takes several times as long as the DynamoDB JSON codec treeport already
// has for export files; on a machine that also runs the engine (DynamoDB
// Local) or a busy client, that CPU is throughput.
//
// Anything else goes to the SDK's protocol as before: the requests, the
// error responses (throttling, validation) and any body decodeScanOutput
// does not know in every detail, which the SDK decodes from the same bytes.
func fastScanDecoding(o *dynamodb.Options) {
	if o.Protocol != nil {
		o.Protocol = scanProtocol{o.Protocol}
	}
}

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
// ReturnConsumedCapacity INDEXES, a malformed item), which the caller then
// has the SDK decode. Each item is decoded by ddbjson.DecodeItem; strings
// are copied, so nothing refers to body afterwards.
func decodeScanOutput(body []byte, out *dynamodb.ScanOutput) bool {
	d := envelope{b: body}
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

// envelope reads the JSON around a response's items.
type envelope struct {
	b   []byte
	pos int
}

func (d *envelope) space() {
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
func (d *envelope) next(c byte) bool {
	d.space()
	if d.pos < len(d.b) && d.b[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// object reads an object, calling member for each key with the reader on
// its value.
func (d *envelope) object(member func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		key, ok := d.plainString()
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

// plainString reads a string without escapes (keys and table names), and
// fails on one with escapes.
func (d *envelope) plainString() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	end := bytes.IndexByte(d.b[d.pos:], '"')
	if end < 0 {
		return nil, false
	}
	s := d.b[d.pos : d.pos+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, false
	}
	d.pos += end + 1
	return s, true
}

// number returns the text of a JSON number.
func (d *envelope) number() ([]byte, bool) {
	start := d.pos
	for d.pos < len(d.b) {
		c := d.b[d.pos]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.pos++
			continue
		}
		break
	}
	return d.b[start:d.pos], d.pos > start
}

func (d *envelope) int32() (int32, bool) {
	s, ok := d.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s), 10, 32)
	return int32(n), err == nil
}

func (d *envelope) float() (*float64, bool) {
	s, ok := d.number()
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	return &f, err == nil
}

// items reads the array of items.
func (d *envelope) items(out *dynamodb.ScanOutput) bool {
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

// item reads one item object with ddbjson.DecodeItem, once skipObject has
// found where it ends.
func (d *envelope) item() (map[string]types.AttributeValue, bool) {
	end, ok := skipObject(d.b, d.pos)
	if !ok {
		return nil, false
	}
	item, err := ddbjson.DecodeItem(d.b[d.pos:end])
	d.pos = end
	return item, err == nil
}

// consumed reads a ConsumedCapacity of the table's total; the per-index
// breakdown is left to the SDK.
func (d *envelope) consumed(cc *types.ConsumedCapacity) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "TableName":
			var name []byte
			name, ok = d.plainString()
			s := string(name)
			cc.TableName = &s
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

// skipObject returns the offset just past the JSON object that starts at
// b[start], matching braces and brackets outside strings. It checks no more
// than that: DecodeItem checks the object itself.
func skipObject(b []byte, start int) (int, bool) {
	if start >= len(b) || b[start] != '{' {
		return 0, false
	}
	depth := 0
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case '"':
			// Skip the string: to the next quote no backslash escapes.
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
	return 0, false
}
