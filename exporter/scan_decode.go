package exporter

import (
	"bytes"
	"context"
	"encoding/base64"
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
	d := scanDecoder{b: body, strs: ddbjson.StringReader{StrictSurrogates: true}, slab: ddbjson.Slab{Size: slabSize}}
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
			item, ok := d.item(0)
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

// maxDecodeDepth is how deeply lists and maps may nest, DynamoDB's limit.
const maxDecodeDepth = 32

// scanDecoder reads a Scan response. It is written for speed, since a
// scan's client spends most of its time here: names are interned (every
// item repeats them), maps are made at their size, and the members of S
// and N values are allocated by the slab. Strings are read by
// internal/ddbjson's StringReader, strict about lone surrogates, which it
// leaves to the SDK.
type scanDecoder struct {
	b   []byte
	pos int

	names    map[string]string
	lastSize int // of the last item
	strs     ddbjson.StringReader
	slab     ddbjson.Slab
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
		item, ok := d.item(0)
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

// item reads an object of attribute names to typed values (an item, or the
// value of an M). A name that appears twice keeps its last value, as with
// the SDK.
func (d *scanDecoder) item(depth int) (map[string]types.AttributeValue, bool) {
	if depth >= maxDecodeDepth || d.pos >= len(d.b) || d.b[d.pos] != '{' {
		return nil, false
	}
	// The items of a table mostly have the same attributes: make the map
	// at the size of the last item, so that it seldom grows.
	hint := 0
	if depth == 0 {
		hint = d.lastSize
	}
	m := make(map[string]types.AttributeValue, hint)
	d.pos++
	if d.next('}') {
		return m, true
	}
	for {
		d.space()
		name, ok := d.name()
		if !ok || !d.next(':') {
			return nil, false
		}
		d.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[name] = v
		if d.next('}') {
			if depth == 0 {
				d.lastSize = len(m)
			}
			return m, true
		}
		if !d.next(',') {
			return nil, false
		}
	}
}

// name reads an attribute name, interned.
func (d *scanDecoder) name() (string, bool) {
	raw, ok := d.rawString()
	if !ok {
		return "", false
	}
	if s, ok := d.names[string(raw)]; ok {
		return s, true
	}
	s := string(raw)
	if d.names == nil {
		d.names = make(map[string]string)
	}
	if len(d.names) < 1024 {
		d.names[s] = s
	}
	return s, true
}

func (d *scanDecoder) str() (string, bool) {
	raw, ok := d.rawString()
	return string(raw), ok
}

// value reads one typed value, {"S":"x"}, with d.pos on its brace.
func (d *scanDecoder) value(depth int) (types.AttributeValue, bool) {
	if !d.next('{') {
		return nil, false
	}
	d.space()
	tag, ok := d.rawString()
	if !ok || !d.next(':') {
		return nil, false
	}
	d.space()
	var v types.AttributeValue
	switch string(tag) {
	case "S":
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		v = d.slab.S(s)
	case "N":
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		v = d.slab.N(s)
	case "B":
		b, ok := d.binary()
		if !ok {
			return nil, false
		}
		v = &types.AttributeValueMemberB{Value: b}
	case "BOOL":
		switch {
		case d.literal("true"):
			v = &types.AttributeValueMemberBOOL{Value: true}
		case d.literal("false"):
			v = &types.AttributeValueMemberBOOL{Value: false}
		default:
			return nil, false
		}
	case "NULL":
		switch {
		case d.literal("true"):
			v = &types.AttributeValueMemberNULL{Value: true}
		case d.literal("false"):
			v = &types.AttributeValueMemberNULL{Value: false}
		default:
			return nil, false
		}
	case "L":
		list := []types.AttributeValue{}
		ok := d.array(func() bool {
			e, ok := d.value(depth + 1)
			list = append(list, e)
			return ok
		})
		if !ok || depth+1 >= maxDecodeDepth {
			return nil, false
		}
		v = &types.AttributeValueMemberL{Value: list}
	case "M":
		m, ok := d.item(depth + 1)
		if !ok {
			return nil, false
		}
		v = &types.AttributeValueMemberM{Value: m}
	case "SS", "NS":
		set := []string{}
		ok := d.array(func() bool {
			s, ok := d.str()
			set = append(set, s)
			return ok
		})
		if !ok {
			return nil, false
		}
		if string(tag) == "SS" {
			v = &types.AttributeValueMemberSS{Value: set}
		} else {
			v = &types.AttributeValueMemberNS{Value: set}
		}
	case "BS":
		set := [][]byte{}
		ok := d.array(func() bool {
			b, ok := d.binary()
			set = append(set, b)
			return ok
		})
		if !ok {
			return nil, false
		}
		v = &types.AttributeValueMemberBS{Value: set}
	default:
		return nil, false
	}
	if !d.next('}') {
		return nil, false
	}
	return v, true
}

// array reads a JSON array, calling elem with the decoder on each element.
func (d *scanDecoder) array(elem func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		d.space()
		if !elem() {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

func (d *scanDecoder) literal(word string) bool {
	if len(d.b)-d.pos >= len(word) && string(d.b[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

// binary reads base64 in a JSON string.
func (d *scanDecoder) binary() ([]byte, bool) {
	raw, ok := d.rawString()
	if !ok {
		return nil, false
	}
	b, err := base64.StdEncoding.AppendDecode(make([]byte, 0, base64.StdEncoding.DecodedLen(len(raw))), raw)
	return b, err == nil
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
