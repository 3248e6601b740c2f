package importer

import (
	"bytes"
	"context"
	"io"
	"math/rand"
	"os"
	"runtime"
	"testing"
	"time"
)

func TestZZProbeParquet(t *testing.T) {
	type row struct {
		ID     int64    `parquet:"id"`
		Parent *string  `parquet:"parent_id,optional"`
		Tags   []string `parquet:"tags,list"`
		F      float64  `parquet:"f"`
	}
	seeds := [][]byte{}
	d1, _ := os.ReadFile(writeParquet(t, []row{{ID: 1, Tags: []string{"a"}}, {ID: 2, Parent: ptr("1"), F: 1.5}}, 2))
	d2, _ := os.ReadFile(writeParquet(t, []pqRow{{ID: 1, Tags: []string{"x"}, Attrs: map[string]int32{"k": 1}, Owner: &pqOwner{Name: "o"}}}, 1))
	seeds = append(seeds, d1, d2)
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20000; i++ {
		d := bytes.Clone(seeds[i%2])
		for k := 0; k < 1+rng.Intn(8); k++ {
			d[rng.Intn(len(d))] = byte(rng.Intn(256))
		}
		done := make(chan string, 1)
		go func() {
			msg := ""
			src, err := newParquetSource(bytes.NewReader(d), int64(len(d)), "f", SourceOptions{KeepRaw: true})
			if err == nil {
				for j := 0; j < 20000; j++ {
					_, err := src.Next(context.Background())
					if err == io.EOF {
						break
					}
				}
			}
			done <- msg
		}()
		select {
		case <-done:
		case <-time.After(4 * time.Second):
			os.WriteFile("/tmp/slow.parquet", d, 0o644)
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			os.WriteFile("/tmp/stack.txt", buf[:n], 0o644)
			t.Fatalf("input %d slow", i)
		}
	}
}
