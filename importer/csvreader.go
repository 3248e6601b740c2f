package importer

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"io"
	"unicode/utf8"
)

// csvReader reads RFC 4180 records exactly as encoding/csv's Reader does
// with the settings treeport uses (no comment lines, no lazy quotes, no
// trimming, the field count fixed by the first record), but hands out each
// record's fields as byte slices that stay valid until the next read, so
// that a row costs no allocation.
//
// A line without a quote, the common case, is split on the delimiter
// directly. Any other line goes through a port of encoding/csv's
// readRecord, which gives the same fields, the same line numbers and the
// same *csv.ParseError values (FuzzCSVReader checks all three against
// encoding/csv on arbitrary input).
type csvReader struct {
	r         *bufio.Reader
	comma     rune
	commaLen  int
	commaByte byte // comma when it is one byte (ASCII); 0 sends every line to the careful path
	numLine   int
	nfields   int // fields per record: set by the first record

	rawBuffer    []byte // a line longer than the bufio.Reader's buffer
	recordBuffer []byte // the careful path's unescaped fields, one after another
	fieldIndexes []int
	fields       [][]byte
	// data holds the last record's fields, and starts where each begins in
	// it: fields[i] is data[starts[i]:starts[i]+len(fields[i])], so that a
	// caller can copy the record once and cut its fields out of the copy.
	data   []byte
	starts []int

	// recLine is the line the last record started on.
	recLine int
	// body is the last record's line without its line ending when it took
	// the quick path, and nil otherwise. Its fields are the pieces between
	// the one-byte delimiters, so it is valid UTF-8 exactly when they all are.
	body []byte
}

func newCSVReader(r *bufio.Reader, comma rune) *csvReader {
	cr := &csvReader{r: r, comma: comma, commaLen: utf8.RuneLen(comma)}
	if comma < utf8.RuneSelf {
		cr.commaByte = byte(comma)
	}
	return cr
}

// validDelim is encoding/csv's rule for a delimiter.
func validDelim(r rune) bool {
	return r != 0 && r != '"' && r != '\r' && r != '\n' && utf8.ValidRune(r) && r != utf8.RuneError
}

// read reads one record, with encoding/csv's Read contract: with a
// *csv.ParseError it returns the fields read before the problem (all of
// them for csv.ErrFieldCount), io.EOF at the end, and with any other error
// (a failure to read) what was read of the record. The fields are valid
// until the next call.
func (r *csvReader) read() ([][]byte, error) {
	// Read a line, skipping empty ones.
	var line []byte
	var errRead error
	for errRead == nil {
		line, errRead = r.readLine()
		if errRead == nil && len(line) == lengthNL(line) {
			line = nil
			continue
		}
		break
	}
	if errRead == io.EOF {
		return nil, errRead
	}
	r.recLine = r.numLine
	r.fields = r.fields[:0]
	r.starts = r.starts[:0]
	r.body = nil
	var err error
	if r.commaByte != 0 && bytes.IndexByte(line, '"') < 0 {
		// The quick path: no quote, so every field is what lies between
		// two delimiters, and the record is this one line.
		body := line[:len(line)-lengthNL(line)]
		r.body, r.data = body, body
		start := 0
		for {
			i := bytes.IndexByte(body[start:], r.commaByte)
			r.starts = append(r.starts, start)
			if i < 0 {
				r.fields = append(r.fields, body[start:])
				break
			}
			r.fields = append(r.fields, body[start:start+i:start+i])
			start += i + 1
		}
	} else {
		err = r.parse(line, errRead)
	}
	if err == nil {
		err = errRead
	}
	if r.nfields > 0 {
		if len(r.fields) != r.nfields && err == nil {
			err = &csv.ParseError{StartLine: r.recLine, Line: r.recLine, Column: 1, Err: csv.ErrFieldCount}
		}
	} else {
		r.nfields = len(r.fields)
	}
	return r.fields, err
}

// parse is encoding/csv's readRecord from its first line on, without the
// options treeport does not use. It fills r.fields and returns a
// *csv.ParseError, or nil.
func (r *csvReader) parse(line []byte, errRead error) error {
	var err error
	const quoteLen = len(`"`)
	recLine := r.recLine
	r.recordBuffer = r.recordBuffer[:0]
	r.fieldIndexes = r.fieldIndexes[:0]
	col := 1 // of pos, in the current line
	posLine := r.numLine
parseField:
	for {
		if len(line) == 0 || line[0] != '"' {
			// A field without quotes.
			i := bytes.IndexRune(line, r.comma)
			field := line
			if i >= 0 {
				field = field[:i]
			} else {
				field = field[:len(field)-lengthNL(field)]
			}
			if j := bytes.IndexByte(field, '"'); j >= 0 {
				err = &csv.ParseError{StartLine: recLine, Line: r.numLine, Column: col + j, Err: csv.ErrBareQuote}
				break parseField
			}
			r.recordBuffer = append(r.recordBuffer, field...)
			r.fieldIndexes = append(r.fieldIndexes, len(r.recordBuffer))
			if i >= 0 {
				line = line[i+r.commaLen:]
				col += i + r.commaLen
				continue parseField
			}
			break parseField
		}
		// A quoted field.
		line = line[quoteLen:]
		col += quoteLen
		for {
			i := bytes.IndexByte(line, '"')
			if i >= 0 {
				// The next quote.
				r.recordBuffer = append(r.recordBuffer, line[:i]...)
				line = line[i+quoteLen:]
				col += i + quoteLen
				switch rn := nextRune(line); {
				case rn == '"':
					// `""`: a quote.
					r.recordBuffer = append(r.recordBuffer, '"')
					line = line[quoteLen:]
					col += quoteLen
				case rn == r.comma:
					// `",`: the end of the field.
					line = line[r.commaLen:]
					col += r.commaLen
					r.fieldIndexes = append(r.fieldIndexes, len(r.recordBuffer))
					continue parseField
				case lengthNL(line) == len(line):
					// `"\n`: the end of the record.
					r.fieldIndexes = append(r.fieldIndexes, len(r.recordBuffer))
					break parseField
				default:
					// `"*`: a quote that is neither doubled nor closing.
					err = &csv.ParseError{StartLine: recLine, Line: r.numLine, Column: col - quoteLen, Err: csv.ErrQuote}
					break parseField
				}
			} else if len(line) > 0 {
				// The end of the line, inside the quotes: the field goes on.
				r.recordBuffer = append(r.recordBuffer, line...)
				if errRead != nil {
					break parseField
				}
				col += len(line)
				line, errRead = r.readLine()
				if len(line) > 0 {
					posLine++
					col = 1
				}
				if errRead == io.EOF {
					errRead = nil
				}
			} else {
				// The end of the input inside the quotes.
				if errRead == nil {
					err = &csv.ParseError{StartLine: recLine, Line: posLine, Column: col, Err: csv.ErrQuote}
					break parseField
				}
				r.fieldIndexes = append(r.fieldIndexes, len(r.recordBuffer))
				break parseField
			}
		}
	}
	if err == nil && errRead != nil {
		err = errRead
	}
	prev := 0
	for _, end := range r.fieldIndexes {
		r.starts = append(r.starts, prev)
		r.fields = append(r.fields, r.recordBuffer[prev:end:end])
		prev = end
	}
	r.data = r.recordBuffer
	return err
}

// readLine reads the next line with its line ending, \r\n turned into \n.
// At the end of the input, a last line without a line ending comes without
// one (and without a trailing \r), and io.EOF only comes once there is
// nothing left. The line is valid until the next call.
func (r *csvReader) readLine() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.rawBuffer = append(r.rawBuffer[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.r.ReadSlice('\n')
			r.rawBuffer = append(r.rawBuffer, line...)
		}
		line = r.rawBuffer
	}
	n := len(line)
	if n > 0 && err == io.EOF {
		err = nil
		// As encoding/csv does: a trailing \r before the end is dropped.
		if line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	r.numLine++
	if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		line[n-2] = '\n'
		line = line[:n-1]
	}
	return line, err
}

// lengthNL is the length of b's trailing \n: 1 or 0.
func lengthNL(b []byte) int {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return 1
	}
	return 0
}

// nextRune returns the first rune of b, or utf8.RuneError.
func nextRune(b []byte) rune {
	r, _ := utf8.DecodeRune(b)
	return r
}
