package records

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// TestInferenceWritesWhatHoldingInfers: a writer from an Inference that
// saw every record, in another order, writes the bytes of the writer
// that held the records and inferred their columns, for csv and parquet.
func TestInferenceWritesWhatHoldingInfers(t *testing.T) {
	var recs []*transform.Record
	for i := range 300 {
		a := transform.Attrs{}
		switch i % 4 {
		case 0:
			a["n"] = &types.AttributeValueMemberN{Value: fmt.Sprint(i)}
		case 1:
			a["n"] = &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.25", i)}
			a["m"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}}
		case 2:
			a["s"] = &types.AttributeValueMemberS{Value: "x"}
			a["l"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}}}
		case 3:
			a["s"] = &types.AttributeValueMemberNULL{Value: true}
		}
		recs = append(recs, &transform.Record{ID: fmt.Sprintf("r%d", i), Parent: "p", Attrs: a})
	}
	for _, format := range []string{FormatCSV, FormatParquet} {
		t.Run(format, func(t *testing.T) {
			opts := WriterOptions{Format: format}
			var held, streamed bytes.Buffer
			w, err := NewWriter(&held, opts)
			if err != nil {
				t.Fatal(err)
			}
			f := NewInference(format)
			for i := len(recs) - 1; i >= 0; i-- {
				f.Observe(recs[i])
			}
			s, err := f.NewWriter(&streamed, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
				if err := s.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if held.Len() < 500 || !bytes.Equal(held.Bytes(), streamed.Bytes()) {
				t.Errorf("streamed %d bytes, held %d: not the same", streamed.Len(), held.Len())
			}
		})
	}
	if NewInference(FormatJSONL) != nil {
		t.Error("jsonl infers nothing")
	}
}
