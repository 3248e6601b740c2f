package exporter

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/treeport/treeport/internal/ddbjson"
)

// sdkScanDecoder decodes Scan response bodies with the SDK's own protocol,
// the reference decodeScanOutput must agree with. The protocol's arguments
// (the operation's schema and type registry are internal to the SDK) are
// caught from one real call to a test server.
type sdkScanDecoder struct {
	proto  smithyhttp.ClientProtocol
	schema *smithy.OperationSchema
	reg    *smithy.TypeRegistry
}

type catchProtocol struct {
	smithyhttp.ClientProtocol
	caught *sdkScanDecoder
}

func (p catchProtocol) DeserializeResponse(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry, resp *smithyhttp.Response, out smithy.Deserializable) error {
	*p.caught = sdkScanDecoder{proto: p.ClientProtocol, schema: schema, reg: reg}
	return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
}

var sdkDecoder = sync.OnceValues(func() (*sdkScanDecoder, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{"Count":0,"Items":[],"ScannedCount":0}`)
	}))
	defer srv.Close()
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("treeport", "treeport", ""),
	})
	var d sdkScanDecoder
	_, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t")}, func(o *dynamodb.Options) {
		o.Protocol = catchProtocol{o.Protocol, &d}
	})
	return &d, err
})

// decode decodes body as the SDK does.
func (d *sdkScanDecoder) decode(body []byte) (*dynamodb.ScanOutput, error) {
	out := &dynamodb.ScanOutput{}
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body))}}
	return out, d.proto.DeserializeResponse(context.Background(), d.schema, d.reg, resp, out)
}

// checkAgainstSDK decodes body both ways and fails when decodeScanOutput
// takes it and decodes it otherwise than the SDK. It reports whether
// decodeScanOutput took it.
func checkAgainstSDK(t *testing.T, body []byte) bool {
	t.Helper()
	sdk, err := sdkDecoder()
	if err != nil {
		t.Fatal(err)
	}
	var got dynamodb.ScanOutput
	if !decodeScanOutput(body, &got) {
		return false
	}
	want, err := sdk.decode(body)
	if err != nil {
		t.Fatalf("decodeScanOutput took a body the SDK rejects (%v):\n%s", err, body)
	}
	got.ResultMetadata, want.ResultMetadata = want.ResultMetadata, got.ResultMetadata
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("decoded\n%#v\nthe SDK decodes\n%#v\nfrom\n%s", got, *want, body)
	}
	return true
}

func TestDecodeScanOutputAgreesWithSDK(t *testing.T) {
	tests := []struct {
		name string
		body string
		fast bool // decodeScanOutput takes it, rather than leaving it to the SDK
	}{
		{name: "empty page", body: `{"Count":0,"Items":[],"ScannedCount":0}`, fast: true},
		{name: "blank space", body: " {\n \"Count\" : 1 , \"Items\" : [ { \"a\" : { \"S\" : \"x\" } } ] ,\"ScannedCount\":3}\n", fast: true},
		{name: "every type", fast: true, body: `{"Count":1,"Items":[{"s":{"S":"x"},"n":{"N":"-1.5E3"},"b":{"B":"AAEC"},"t":{"BOOL":true},"f":{"BOOL":false},` +
			`"z":{"NULL":true},"l":{"L":[{"S":"a"},{"N":"1"},{"L":[]},{"M":{}}]},"m":{"M":{"k":{"SS":["a","b"]},"e":{"M":{}}}},` +
			`"ss":{"SS":["x","y"]},"ns":{"NS":["1","2.5"]},"bs":{"BS":["AA==","AQ=="]},"empty":{"S":""}}],"ScannedCount":1}`},
		{name: "escapes", fast: true, body: `{"Items":[{"q":{"S":"a\"b\\c\/d\b\f\n\r\t"},"u":{"S":"\u00e9\u4e2d\ud83d\ude00"},"raw":{"S":"é中😀"},"k\"ey":{"N":"1"}}]}`},
		{name: "last key and capacity", fast: true, body: `{"ConsumedCapacity":{"CapacityUnits":128.5,"TableName":"t.1-x_y"},"Count":1,"Items":[{"Id":{"S":"a"}}],` +
			`"LastEvaluatedKey":{"Id":{"S":"a"},"Depth":{"N":"3"}},"ScannedCount":2}`},
		{name: "read and write units", fast: true, body: `{"ConsumedCapacity":{"CapacityUnits":1,"ReadCapacityUnits":1,"WriteCapacityUnits":0,"TableName":"t"},"Items":[]}`},
		{name: "a name twice keeps the last", fast: true, body: `{"Items":[{"a":{"S":"1"},"a":{"S":"2"}}]}`},
		{name: "items of other sizes", fast: true, body: `{"Items":[{"a":{"S":"1"}},{"a":{"S":"1"},"b":{"S":"2"},"c":{"S":"3"}},{}]}`},
		{name: "index capacity is left to the SDK", body: `{"ConsumedCapacity":{"CapacityUnits":1,"Table":{"CapacityUnits":1},"TableName":"t"},"Items":[]}`},
		{name: "unknown key is left to the SDK", body: `{"Items":[],"Extra":1}`},
		{name: "lone surrogate is left to the SDK", body: `{"Items":[{"a":{"S":"\ud83d"}}]}`},
		{name: "unknown type is left to the SDK", body: `{"Items":[{"a":{"X":"1"}}]}`},
		{name: "truncated body is left to the SDK", body: `{"Items":[{"a":{"S":"1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fast := checkAgainstSDK(t, []byte(tt.body)); fast != tt.fast {
				t.Errorf("decodeScanOutput took it: %v, want %v", fast, tt.fast)
			}
		})
	}
}

// TestDecodeScanOutputRandomItems compares with the SDK on pages of random
// items, of every type and nested, with strings that need escaping.
func TestDecodeScanOutputRandomItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for page := range 200 {
		body := []byte(`{"Count":5,"Items":[`)
		for i := range 5 {
			if i > 0 {
				body = append(body, ',')
			}
			body = ddbjson.AppendItem(body, randomItem(rng, 0))
		}
		body = append(body, `],"ScannedCount":9}`...)
		if !checkAgainstSDK(t, body) {
			t.Fatalf("page %d: decodeScanOutput left it to the SDK:\n%s", page, body)
		}
	}
}

func randomItem(rng *rand.Rand, depth int) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{}
	for range rng.IntN(6) {
		item[randomString(rng)] = randomValue(rng, depth)
	}
	return item
}

func randomString(rng *rand.Rand) string {
	const chars = "aZ09 _-\"\\/\n\t\x01\x7féß中😀"
	runes := []rune(chars)
	var b strings.Builder
	for range rng.IntN(8) {
		b.WriteRune(runes[rng.IntN(len(runes))])
	}
	return b.String()
}

func randomValue(rng *rand.Rand, depth int) types.AttributeValue {
	k := rng.IntN(10)
	if depth > 3 && k >= 6 {
		k = rng.IntN(6)
	}
	switch k {
	case 0:
		return &types.AttributeValueMemberS{Value: randomString(rng)}
	case 1:
		return &types.AttributeValueMemberN{Value: fmt.Sprint(rng.NormFloat64() * 1e6)}
	case 2:
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return &types.AttributeValueMemberB{Value: b}
	case 3:
		return &types.AttributeValueMemberBOOL{Value: rng.IntN(2) == 0}
	case 4:
		return &types.AttributeValueMemberNULL{Value: true}
	case 5:
		return &types.AttributeValueMemberSS{Value: []string{randomString(rng), randomString(rng) + "x"}}
	case 6:
		return &types.AttributeValueMemberNS{Value: []string{"1", fmt.Sprint(rng.IntN(1000))}}
	case 7:
		return &types.AttributeValueMemberBS{Value: [][]byte{{1}, []byte(base64.StdEncoding.EncodeToString([]byte{2}))}}
	case 8:
		l := []types.AttributeValue{}
		for range rng.IntN(4) {
			l = append(l, randomValue(rng, depth+1))
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	return &types.AttributeValueMemberM{Value: randomItem(rng, depth+1)}
}

// FuzzDecodeScanOutput: whatever the body, decodeScanOutput either leaves it
// to the SDK or decodes it as the SDK does.
func FuzzDecodeScanOutput(f *testing.F) {
	f.Add([]byte(`{"Count":1,"Items":[{"a":{"S":"x\n"},"b":{"L":[{"N":"1"},{"M":{"c":{"BOOL":true}}}]}}],"ScannedCount":1}`))
	f.Add([]byte(`{"ConsumedCapacity":{"CapacityUnits":0.5,"TableName":"t"},"Items":[],"LastEvaluatedKey":{"k":{"B":"AA=="}}}`))
	f.Add([]byte(`{"Items":[{"u":{"S":"\u00e9\ud83d\ude00"},"s":{"SS":["a"]},"n":{"NS":["1"]},"z":{"NULL":true}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAgainstSDK(t, body)
	})
}

// TestScanProtocolFallsBack: a body decodeScanOutput does not take reaches
// the caller as the SDK decodes it, through a real client.
func TestScanProtocolFallsBack(t *testing.T) {
	body := `{"ConsumedCapacity":{"CapacityUnits":2,"GlobalSecondaryIndexes":{"ByPath":{"CapacityUnits":1}},"TableName":"t"},"Count":1,"Items":[{"a":{"S":"x"}}],"ScannedCount":1}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, body)
	}))
	defer srv.Close()
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("treeport", "treeport", ""),
	})
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t")}, fastScanDecoding)
	if err != nil {
		t.Fatal(err)
	}
	ix := out.ConsumedCapacity.GlobalSecondaryIndexes["ByPath"]
	if len(out.Items) != 1 || ix.CapacityUnits == nil || *ix.CapacityUnits != 1 {
		t.Errorf("got %+v", out)
	}
}

// BenchmarkDecodeScanOutput decodes a 1 MB Scan page of path-layout items
// (ids, parents, paths, depths and a few attributes, some with escapes and
// non-ASCII text), the CPU a scan's client spends on each page.
func BenchmarkDecodeScanOutput(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	body := []byte(`{"ConsumedCapacity":{"CapacityUnits":128.5,"TableName":"Tree"},"Count":0,"Items":[`)
	n := 0
	for len(body) < 1<<20 {
		if n > 0 {
			body = append(body, ',')
		}
		id := fmt.Sprintf("node-%07d", n)
		item := map[string]types.AttributeValue{
			"Id":       &types.AttributeValueMemberS{Value: id},
			"ParentId": &types.AttributeValueMemberS{Value: fmt.Sprintf("node-%07d", n/3)},
			"Path":     &types.AttributeValueMemberS{Value: fmt.Sprintf("/node-%07d/node-%07d/%s", n/9, n/3, id)},
			"Depth":    &types.AttributeValueMemberN{Value: fmt.Sprint(3 + rng.IntN(5))},
			"Name":     &types.AttributeValueMemberS{Value: []string{"Bolt M6", "Écrou \"hex\"", "軸受 6204", "plain name"}[rng.IntN(4)]},
			"Qty":      &types.AttributeValueMemberN{Value: fmt.Sprint(rng.IntN(1000))},
			"Active":   &types.AttributeValueMemberBOOL{Value: rng.IntN(2) == 0},
			"Tags":     &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "a"}, &types.AttributeValueMemberS{Value: "b\n"}}},
		}
		body = ddbjson.AppendItem(body, item)
		n++
	}
	body = append(body, fmt.Sprintf(`],"LastEvaluatedKey":{"Id":{"S":"node-%07d"}},"ScannedCount":%d}`, n-1, n)...)
	var out dynamodb.ScanOutput
	if !decodeScanOutput(body, &out) || len(out.Items) != n {
		b.Fatalf("decodeScanOutput did not take the page (%d items)", len(out.Items))
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		out = dynamodb.ScanOutput{}
		decodeScanOutput(body, &out)
	}
	b.ReportMetric(float64(n), "items/page")
}
