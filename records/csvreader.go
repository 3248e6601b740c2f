package records

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"io"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/treeport/treeport/internal/swar"
	"github.com/treeport/treeport/records/infile"
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
	// data holds the last record's fields, and starts (filled by
	// fieldSlices) where each begins in it: fields[i] is
	// data[starts[i]:starts[i]+len(fields[i])], so that a caller can copy
	// the record once and cut its fields out of the copy.
	data   []byte
	starts []int

	// recLine is the line the last record started on.
	recLine int
	// body is the last record's line without its line ending when it took
	// the quick path, and nil otherwise. Its fields are the pieces between
	// the one-byte delimiters, so it is valid UTF-8 exactly when they all are.
	body []byte
	// ascii: body is all ASCII, so valid UTF-8.
	ascii bool
	// bounds holds where each field of the last record starts and ends in
	// data: field j is data[bounds[2j]:bounds[2j+1]].
	bounds []int
	// win is readQuick's window on the bufio.Reader's buffer, of which it
	// has read pos bytes.
	win []byte
	pos int

	// keepRaw: parse keeps the lines of a record it reads in raw, so that
	// a record it cannot parse can still be given back as it came in.
	keepRaw bool
	raw     []byte
	// crlf: the last line readLine returned ended in \r\n, which it gave
	// as \n.
	crlf bool

	// limit bounds the bytes of one record (0: no bound); recBytes counts
	// those of the record being read, and longAt is the line a record
	// went over the limit on.
	limit    int
	recBytes int
	longAt   int
}

// errLongRecord is the Err of the *csv.ParseError of a record over the
// reader's limit. The reader has read on to the record's end, keeping
// nothing of it, so the next read is the next record.
var errLongRecord = errors.New("the record is over the limit")

// errLongField is the Err of the *csv.ParseError of a record with a field
// over infile.MaxFieldBytes; the ParseError's Column is the field's, from 1.
var errLongField = errors.New("a field is over the limit")

func newCSVReader(r *bufio.Reader, comma rune) *csvReader {
	cr := &csvReader{r: r, comma: comma, commaLen: utf8.RuneLen(comma), limit: infile.MaxRecordBytes}
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
	err := r.next()
	if err == io.EOF {
		return nil, err
	}
	return r.fieldSlices(), err
}

// next is read without making the fields slices: field j of the record is
// r.data[r.bounds[2j]:r.bounds[2j+1]], and the record has nfield() fields.
// fieldSlices makes them slices, as read returns them.
func (r *csvReader) next() error {
	r.fields = r.fields[:0] // made again by fieldSlices
	if r.commaByte != 0 {
		// readQuick, with its most common case first.
		quick := false
		if buf := r.win[r.pos:]; len(buf) >= 64 {
			res, ok := r.quickLine64(buf)
			if ok {
				quick = res == quickDone
			} else {
				quick = r.readQuick()
			}
		} else {
			quick = r.readQuick()
		}
		if quick {
			return r.countFields(nil)
		}
		r.sync()
	}
	// Read a line, skipping empty ones.
	var line []byte
	var errRead error
	for errRead == nil {
		r.recBytes = 0
		line, errRead = r.readLine(false)
		if errRead == nil && len(line) == lengthNL(line) {
			line = nil
			continue
		}
		break
	}
	r.bounds = r.bounds[:0]
	r.body = nil
	r.ascii = false
	if errRead == io.EOF {
		return errRead
	}
	if errRead == errLongRecord {
		r.recLine = r.longAt
		r.data = nil
		return &csv.ParseError{StartLine: r.recLine, Line: r.recLine, Column: 1, Err: errLongRecord}
	}
	r.recLine = r.numLine
	var err error
	if r.commaByte != 0 && bytes.IndexByte(line, '"') < 0 {
		// No quote, so every field is what lies between two delimiters,
		// and the record is this one line.
		body := line[:len(line)-lengthNL(line)]
		r.body, r.data = body, body
		start := 0
		for {
			i := bytes.IndexByte(body[start:], r.commaByte)
			if i < 0 {
				r.bounds = append(r.bounds, start, len(body))
				break
			}
			r.bounds = append(r.bounds, start, start+i)
			start += i + 1
		}
	} else {
		err = r.parse(line, errRead)
	}
	if err == nil && len(r.data) > infile.MaxFieldBytes {
		// Only a record this long can hold a field over the limit (a
		// line the quick way reads is shorter).
		for j := range r.nfield() {
			if r.bounds[2*j+1]-r.bounds[2*j] > infile.MaxFieldBytes {
				err = &csv.ParseError{StartLine: r.recLine, Line: r.recLine, Column: j + 1, Err: errLongField}
				break
			}
		}
	}
	if err == nil {
		err = errRead
	}
	return r.countFields(err)
}

// countFields is the end of next: the first record sets the number of
// fields, and another number is csv.ErrFieldCount, unless err came first.
func (r *csvReader) countFields(err error) error {
	n := r.nfield()
	if r.nfields > 0 {
		if n != r.nfields && err == nil {
			err = &csv.ParseError{StartLine: r.recLine, Line: r.recLine, Column: 1, Err: csv.ErrFieldCount}
		}
	} else {
		r.nfields = n
	}
	return err
}

// nfield is the number of fields of the last record.
func (r *csvReader) nfield() int { return len(r.bounds) / 2 }

// field returns field j of the last record, valid until the next read.
func (r *csvReader) field(j int) []byte {
	a, b := r.bounds[2*j], r.bounds[2*j+1]
	return r.data[a:b:b]
}

// fieldSlices returns the fields of the last record as read does, and
// fills r.starts, where each starts in r.data.
func (r *csvReader) fieldSlices() [][]byte {
	if len(r.fields) == r.nfield() && len(r.fields) > 0 {
		return r.fields // made since the last read
	}
	r.fields, r.starts = r.fields[:0], r.starts[:0]
	for j := range r.nfield() {
		r.fields = append(r.fields, r.field(j))
		r.starts = append(r.starts, r.bounds[2*j])
	}
	return r.fields
}

// readQuick reads the next record when it is a line that holds no quote
// and is not empty: the common case, which it splits into fields in one
// pass over the bytes, looking at eight at a time for the delimiter, a line
// end, a quote or a byte that is not ASCII. It reads from a window on the
// bufio.Reader's buffer, which it hands back (sync) only when the window
// has no whole line left, or before next reads the careful way. It reports
// false, having read nothing, for any other line, and for a line of more
// fields than r.bounds has room for; next then takes the line the careful
// way (which makes the room).
func (r *csvReader) readQuick() bool {
	switch r.quickLine() {
	case quickDone:
		return true
	case quickNo:
		return false
	}
	// No whole line left in the window: look at what is buffered, and
	// then at more.
	r.sync()
	if n := r.r.Buffered(); n > 0 {
		r.win, _ = r.r.Peek(n)
		switch r.quickLine() {
		case quickDone:
			return true
		case quickNo:
			return false
		}
		r.sync()
	}
	r.win, _ = r.r.Peek(r.r.Buffered() + 1)
	return r.quickLine() == quickDone
}

// sync hands the part of the window readQuick has read back to the
// bufio.Reader, and forgets the window.
func (r *csvReader) sync() {
	if r.pos > 0 {
		r.r.Discard(r.pos)
	}
	r.win, r.pos = nil, 0
}

// What quickLine did.
const (
	quickDone = iota // read a record
	quickNo          // a line for the careful way
	quickMore        // no whole line in the window
)

// quickLine is readQuick on the window.
func (r *csvReader) quickLine() int {
	buf := r.win[r.pos:]
	if len(buf) >= 64 {
		if res, ok := r.quickLine64(buf); ok {
			return res
		}
	}
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		return quickMore
	}
	end := nl
	if end > 0 && buf[end-1] == '\r' {
		end-- // \r\n ends a line as \n does
	}
	line := buf[:end]
	if end == 0 || bytes.IndexByte(line, '"') >= 0 {
		return quickNo // an empty line, which next skips, or quotes
	}
	// A line of n bytes has at most n+1 fields: with room for as many,
	// the loops below store their bounds without a check.
	if cap(r.bounds) < 2*len(line)+2 {
		r.bounds = make([]int, 0, 2*(2*len(line)+2))
	}
	bounds := r.bounds[:2*len(line)+2]
	bp := unsafe.Pointer(unsafe.SliceData(bounds))
	lp := unsafe.Pointer(unsafe.SliceData(line))
	commas := uint64(r.commaByte) * swar.LSBs
	nb := 0    // bounds filled
	start := 0 // of the field being read
	var high uint64
	i := 0
	// The delimiters, eight bytes at a time; and whether a byte is not ASCII.
	for ; i+8 <= len(line); i += 8 {
		w := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(lp, i))[:])
		high |= w
		for cm := swar.ZeroBytes(w ^ commas); cm != 0; cm &= cm - 1 {
			e := i + bits.TrailingZeros64(cm)>>3
			*(*[2]int)(unsafe.Add(bp, uintptr(nb)*intSize)) = [2]int{start, e}
			nb += 2
			start = e + 1
		}
	}
	if rest := len(line) - i; rest > 0 && i+8 <= len(buf) {
		// The last bytes, as the low ones of a word that goes on into
		// the line's end and what follows it in the window.
		keep := ^uint64(0) >> (64 - 8*uint(rest))
		w := binary.LittleEndian.Uint64(buf[i : i+8])
		high |= w & keep
		for cm := swar.ZeroBytes(w^commas) & keep; cm != 0; cm &= cm - 1 {
			e := i + bits.TrailingZeros64(cm)>>3
			*(*[2]int)(unsafe.Add(bp, uintptr(nb)*intSize)) = [2]int{start, e}
			nb += 2
			start = e + 1
		}
		i = len(line)
	}
	for ; i < len(line); i++ {
		c := line[i]
		high |= uint64(c)
		if c == r.commaByte {
			*(*[2]int)(unsafe.Add(bp, uintptr(nb)*intSize)) = [2]int{start, i}
			nb += 2
			start = i + 1
		}
	}
	bounds[nb], bounds[nb+1] = start, end
	r.bounds = bounds[:nb+2]
	r.ascii = high&swar.MSBs == 0
	r.numLine++
	r.recLine = r.numLine
	r.body, r.data = line, line
	r.pos += nl + 1
	return quickDone
}

// quickLine64 is quickLine for a line that ends within buf's whole blocks
// of 64 bytes: a scan64 of each block finds its delimiters, quotes, line
// feed and non-ASCII bytes at once. It reports false, having changed
// nothing but the memory of r.bounds, when no block holds the line's end.
func (r *csvReader) quickLine64(buf []byte) (int, bool) {
	comma := uint64(r.commaByte) * swar.LSBs
	bounds := r.bounds[:0]
	nb, start := 0, 0
	var high uint64
	for blk := 0; blk+64 <= len(buf); blk += 64 {
		commas, quotes, nls, hi := scan64(&buf[blk], comma)
		in := ^uint64(0) // the block's bytes that are the line's
		if nls != 0 {
			in = uint64(1)<<uint(bits.TrailingZeros64(nls)) - 1
		}
		if quotes&in != 0 {
			return quickNo, true // quotes: the careful way
		}
		high |= hi & in
		commas &= in
		// A field for each delimiter, and the last one.
		if need := nb + 2*bits.OnesCount64(commas) + 2; need > cap(bounds) {
			bounds = slices.Grow(bounds[:nb], 2*need)
		}
		bounds = bounds[:cap(bounds)]
		bp := unsafe.Pointer(unsafe.SliceData(bounds))
		for ; commas != 0; commas &= commas - 1 {
			e := blk + bits.TrailingZeros64(commas)
			*(*[2]int)(unsafe.Add(bp, uintptr(nb)*intSize)) = [2]int{start, e}
			nb += 2
			start = e + 1
		}
		if nls == 0 {
			continue
		}
		nl := blk + bits.TrailingZeros64(nls)
		end := nl
		if end > 0 && buf[end-1] == '\r' {
			end-- // \r\n ends a line as \n does
		}
		if end == 0 {
			return quickNo, true // an empty line, which next skips
		}
		bounds[nb], bounds[nb+1] = start, end
		line := buf[:end]
		r.bounds = bounds[:nb+2]
		r.ascii = high == 0
		r.numLine++
		r.recLine = r.numLine
		r.body, r.data = line, line
		r.pos += nl + 1
		return quickDone, true
	}
	if cap(bounds) > cap(r.bounds) {
		r.bounds = bounds[:0] // keep the room it took
	}
	return 0, false
}

// intSize is the size of an int.
const intSize = unsafe.Sizeof(int(0))

// parse is encoding/csv's readRecord from its first line on, without the
// options treeport does not use. It fills r.data and r.bounds and returns
// a *csv.ParseError, or nil.
func (r *csvReader) parse(line []byte, errRead error) error {
	var err error
	const quoteLen = len(`"`)
	recLine := r.recLine
	if r.keepRaw {
		r.raw = r.appendLine(r.raw[:0], line)
	}
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
			r.recordBuffer = infile.AppendGrow(r.recordBuffer, field)
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
				r.recordBuffer = infile.AppendGrow(r.recordBuffer, line[:i])
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
				// The end of the line, inside the quotes: the field goes on,
				// with the line's end as it was (encoding/csv turns a \r\n
				// there into \n; RFC 4180 keeps it, and so does treeport, so
				// that an attribute is copied as it is).
				r.recordBuffer = r.appendLine(r.recordBuffer, line)
				if errRead != nil {
					break parseField
				}
				col += len(line)
				line, errRead = r.readLine(true)
				if errRead == errLongRecord {
					r.fieldIndexes = r.fieldIndexes[:0]
					err = &csv.ParseError{StartLine: recLine, Line: recLine, Column: 1, Err: errLongRecord}
					errRead = nil
					break parseField
				}
				if len(line) > 0 {
					posLine++
					col = 1
				}
				if r.keepRaw {
					r.raw = r.appendLine(r.raw, line)
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
		r.bounds = append(r.bounds, prev, end)
		prev = end
	}
	r.data = r.recordBuffer
	return err
}

// readLine reads the next line with its line ending, \r\n turned into \n.
// At the end of the input, a last line without a line ending comes without
// one (and without a trailing \r), and io.EOF only comes once there is
// nothing left. The line is valid until the next call. inQuote says whether
// the line starts inside a quoted field.
//
// A line that takes the record over r.limit is not kept: readLine reads on
// to the record's end and returns errLongRecord (or an error reading).
func (r *csvReader) readLine(inQuote bool) ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.rawBuffer = append(r.rawBuffer[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.r.ReadSlice('\n')
			if r.limit > 0 && r.recBytes+len(r.rawBuffer)+len(line) > r.limit {
				inQuote = inQuote != oddQuotes(r.rawBuffer)
				r.rawBuffer = nil // as large as the limit: not kept
				return nil, r.overLimit(inQuote, line, err)
			}
			r.rawBuffer = infile.AppendGrow(r.rawBuffer, line)
		}
		line = r.rawBuffer
	}
	if r.limit > 0 && r.recBytes+len(line) > r.limit {
		if cap(r.rawBuffer) > keepLineBuffer {
			r.rawBuffer = nil
		}
		return nil, r.overLimit(inQuote, line, err)
	}
	r.recBytes += len(line)
	n := len(line)
	if n > 0 && err == io.EOF {
		err = nil
		// As encoding/csv does: a trailing \r before the end is dropped.
		if line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	r.numLine++
	r.crlf = false
	if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		line[n-2] = '\n'
		line = line[:n-1]
		r.crlf = true
	}
	return line, err
}

// keepLineBuffer is the most of a long line's buffer the reader keeps
// after a record over its limit.
const keepLineBuffer = 1 << 20

// overLimit is readLine at the line that takes a record over the limit:
// inQuote says whether the record is in quotes where the line's last
// piece, tail, starts, and err is the error that came with tail. It reads
// on to the record's end, keeping nothing, and returns errLongRecord (or an
// error reading).
func (r *csvReader) overLimit(inQuote bool, tail []byte, err error) error {
	r.numLine++
	r.longAt = r.numLine
	if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
		return err
	}
	inQuote = inQuote != oddQuotes(tail)
	if err == io.EOF {
		return errLongRecord
	}
	if err == nil { // tail ends the line
		if !inQuote {
			return errLongRecord
		}
		r.numLine++ // the record goes on, on the next line
	}
	return r.skipRecord(inQuote)
}

// skipRecord reads on to the end of a record over the limit, keeping
// nothing of it. inQuote says whether what was read of it leaves it inside
// a quoted field. Each quote opens or closes one (a doubled quote does
// both), so the record ends at the first line end outside quotes, or at
// the end of the input. It returns errLongRecord, or an error reading.
func (r *csvReader) skipRecord(inQuote bool) error {
	for {
		chunk, err := r.r.ReadSlice('\n')
		inQuote = inQuote != oddQuotes(chunk)
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			if !inQuote {
				return errLongRecord
			}
			r.numLine++ // the record goes on, on the next line
		}
		switch {
		case err == nil, err == bufio.ErrBufferFull:
		case err == io.EOF:
			return errLongRecord
		default:
			return err
		}
	}
}

// oddQuotes reports whether b holds an odd number of quotes.
func oddQuotes(b []byte) bool { return bytes.Count(b, []byte{'"'})%2 == 1 }

// appendLine appends the line readLine returned last to dst, with the
// \r\n it ended in when it did.
func (r *csvReader) appendLine(dst, line []byte) []byte {
	if r.crlf && len(line) > 0 && line[len(line)-1] == '\n' {
		dst = infile.AppendGrow(dst, line[:len(line)-1])
		return infile.AppendGrow(dst, []byte{'\r', '\n'})
	}
	return infile.AppendGrow(dst, line)
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
