package records

import (
	"context"
	"math/rand"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/ddbjson"
)

// The quick path and the careful one, and the switches between them at
// every place of the bufio.Reader's buffer, read as encoding/csv does:
// random text of delimiters, quotes, line ends, CRs, ASCII, non-ASCII and
// invalid UTF-8, with buffers of many sizes.
func TestCSVReaderRandomText(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	pieces := []string{"a", "bc", "defghijk", "0123456789012345", ",", ",", ",", "\n", "\n", "\r\n", "\r", "\"", "\"\"", "é", "日本", "\xff", "😀", ";", "\t", "|", "¦"}
	for n := 0; n < 3000; n++ {
		var b []byte
		quotes := rng.Intn(3) == 0
		for k := rng.Intn(60); k > 0; k-- {
			p := pieces[rng.Intn(len(pieces))]
			if !quotes && p[0] == '"' {
				continue
			}
			b = append(b, p...)
		}
		comma := csvDelims[rng.Intn(len(csvDelims))]
		compareCSV(t, b, comma, 16+rng.Intn(64))
		compareCSV(t, b, comma, 4096)
	}
}

// quickNumber accepts only numbers CheckNumber accepts, with their
// numberSize, and most of the plain ones.
func TestQuickNumber(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	numbers := []string{"", "-", "+", ".", "-.", "0", "-0", "+0.000", "00", "1", "-1", "10", ".5", "5.", "1.2.3", "1e5", "1E5", "--1", "1-",
		" 1", "1 ", "0x1", "12345678901234567890123456789012345678", "123456789012345678901234567890123456789",
		"0.0000000000000000000000000000000000001", "-1234567890123456789012345678901234567", "9.9"}
	for range 20000 {
		alphabet := "00123456789.-+eE x"
		if rng.Intn(2) == 0 {
			alphabet = "00123456789." // mostly plain numbers
		}
		var b []byte
		if rng.Intn(3) == 0 {
			b = append(b, '-')
		}
		for k := rng.Intn(45); k > 0; k-- {
			b = append(b, alphabet[rng.Intn(len(alphabet))])
		}
		numbers = append(numbers, string(b))
	}
	quick := 0
	for _, n := range numbers {
		size, ok := quickNumber([]byte(n))
		if !ok {
			continue
		}
		quick++
		if err := ddbjson.CheckNumber(n); err != nil {
			t.Fatalf("quickNumber(%q) accepts what CheckNumber refuses: %v", n, err)
		}
		if want := numberSize([]byte(n)); size != want {
			t.Fatalf("quickNumber(%q) says %d bytes, numberSize %d", n, size, want)
		}
	}
	for _, n := range []string{"0", "-12", "3.25", ".5", "5.", "+7", "12345678901234567890123456789012345678"} {
		if _, ok := quickNumber([]byte(n)); !ok {
			t.Errorf("quickNumber(%q) leaves a plain number to CheckNumber", n)
		}
	}
	if quick < 2000 {
		t.Fatalf("only %d numbers took the quick path", quick)
	}
}

// quickNumberIn, a word at a time, agrees with quickNumber, whatever the
// bytes around the number.
func TestQuickNumberIn(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	alphabets := []string{"0123456789", "00000.1", "0123456789.-+", "0123456789.-+eE x,\xff"}
	for n := 0; n < 300000; n++ {
		alphabet := alphabets[rng.Intn(len(alphabets))]
		var f []byte
		for k := rng.Intn(11); k > 0; k-- {
			f = append(f, alphabet[rng.Intn(len(alphabet))])
		}
		if rng.Intn(3) == 0 && len(f) > 0 {
			f[0] = "-+"[rng.Intn(2)]
		}
		before := make([]byte, rng.Intn(12))
		for i := range before {
			before[i] = byte(rng.Intn(256))
		}
		data := append(append(before, f...), []byte(",x")[:rng.Intn(3)]...)
		a, b := len(before), len(before)+len(f)
		gs, gok := quickNumberIn(data, a, b)
		ws, wok := quickNumber(f)
		if gok != wok || gs != ws {
			t.Fatalf("quickNumberIn(%q in %q) = %d, %v; quickNumber says %d, %v", f, data, gs, gok, ws, wok)
		}
		if ok := quickNumberOK(data, a, b); ok != wok {
			t.Fatalf("quickNumberOK(%q in %q) = %v; quickNumber says %v", f, data, ok, wok)
		}
	}
}

// Lines of every length around the 64-byte blocks of quickLine64, with
// delimiters anywhere, CRLF or LF ends (a CR at a block's end too), an
// occasional quote or non-ASCII byte, read as encoding/csv reads them.
func TestCSVReaderBlockEdges(t *testing.T) {
	rng := rand.New(rand.NewSource(64))
	for n := 1; n <= 200; n++ {
		for range 4 {
			var b []byte
			for range 3 {
				line := make([]byte, n)
				for i := range line {
					switch r := rng.Intn(20); {
					case r < 4:
						line[i] = ','
					case r == 4 && rng.Intn(10) == 0:
						line[i] = '"'
					case r == 5 && rng.Intn(5) == 0:
						line[i] = 0xc3 // invalid alone
					default:
						line[i] = 'a' + byte(rng.Intn(26))
					}
				}
				b = append(b, line...)
				if rng.Intn(2) == 0 {
					b = append(b, '\r')
				}
				b = append(b, '\n')
			}
			for _, size := range []int{16, 64, 100, 4096} {
				compareCSV(t, b, ',', size)
			}
		}
	}
}

// A byte that is not ASCII, in any block of a line, sends the line to the
// UTF-8 check: invalid UTF-8 is refused wherever it is, valid UTF-8 kept.
func TestCSVNonASCIIInEveryBlock(t *testing.T) {
	for at := range 140 { // the byte at 3+at of the line
		for _, tc := range []struct {
			b  string
			ok bool
		}{{"\xff", false}, {"é", true}} {
			pad := strings.Repeat("x", at)
			// Rows after it, so that the window holds its blocks.
			data := "id,parent_id,name\na,," + pad + tc.b + "y\n" + strings.Repeat("b,a,"+strings.Repeat("z", 200)+"\n", 3)
			src, err := OpenSource(writeTemp(t, "in.csv", []byte(data)), SourceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = src.Next(context.Background())
			src.Close()
			if (err == nil) != tc.ok {
				t.Errorf("%q at %d: error %v, want ok=%v", tc.b, at+3, err, tc.ok)
			}
		}
	}
}
