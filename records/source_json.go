package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// maxRecordBytes bounds one JSON record (infile.MaxRecordBytes), so that a
// missing bracket cannot make a source hold the rest of a large file in
// memory.
const maxRecordBytes = infile.MaxRecordBytes

// How a JSON input holds its records.
const (
	jsonLines  = iota // one object a line (JSON Lines)
	jsonStream        // objects one after the other, each over any number of lines
	jsonArray         // one array of objects
)

// jsonSource reads JSON objects: one array of them, or JSON Lines.
//
// It reads through a window of the input: buf[pos:] is what has been read
// but not consumed, and line is the line of buf[pos].
type jsonSource struct {
	in   *infile.Input
	file string
	opts SourceOptions
	mode int
	buf  []byte
	pos  int
	line int
	eof  bool // no more input beyond buf
	// afterElem: in an array, an element was read, so a ',' or a ']' comes next.
	afterElem bool
	done      bool
}

var _ Source = (*jsonSource)(nil)

// openJSON opens JSON or JSON Lines. For "json", the first byte tells: '['
// is an array; '{' is JSON Lines when the first object ends on the first
// line, and a stream of objects over many lines (a pretty-printed object,
// or several) when it does not. "jsonl" is always one object a line.
func openJSON(path, format string, opts SourceOptions) (Source, error) {
	in, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	s, err := newJSONSource(in, path, format, opts)
	if err != nil {
		in.Close()
		return nil, err
	}
	return s, nil
}

func newJSONSource(in *infile.Input, file, format string, opts SourceOptions) (*jsonSource, error) {
	s := &jsonSource{in: in, file: file, opts: opts, line: 1, mode: jsonLines}
	if bom, _ := in.R.Peek(3); string(bom) == "\uFEFF" {
		in.R.Discard(3)
	}
	if format == FormatJSONL {
		return s, nil
	}
	more, err := s.skipSpace()
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", file, infile.NextError(err, file, s.line, ""))
	}
	if !more {
		s.done = true // no records at all
		return s, nil
	}
	switch c := s.buf[s.pos]; c {
	case '[':
		s.mode = jsonArray
		s.pos++
	case '{':
		// JSON Lines when the first object fits on its line.
		if _, err := s.extent(true); err != nil {
			var xe *extentError
			if !errors.As(err, &xe) {
				return nil, fmt.Errorf("importer: %s: %w", file, infile.NextError(err, file, s.line, ""))
			}
			s.mode = jsonStream
		}
	default:
		return nil, fmt.Errorf("importer: %s (line %d) starts with %q: a JSON input is an array of objects or one object a line", file, s.line, c)
	}
	return s, nil
}

// Next reads the next object. A bad object is a RowError; reading goes on
// after it, except when the structure around the objects is broken (an
// unterminated object, a missing comma in an array), where the RowError is
// followed by io.EOF.
func (s *jsonSource) Next(ctx context.Context) (*transform.Record, error) {
	for !s.done {
		var (
			rec *transform.Record
			err error
		)
		switch s.mode {
		case jsonLines:
			rec, err = s.nextLine()
		default:
			rec, err = s.nextValue()
		}
		if rec != nil || err != nil {
			return rec, err
		}
	}
	return nil, io.EOF
}

// nextLine reads one line of JSON Lines. It returns nil, nil for a blank line.
func (s *jsonSource) nextLine() (*transform.Record, error) {
	n := 0 // bytes of the line, without its '\n'
	for {
		if i := bytes.IndexByte(s.buf[s.pos+n:], '\n'); i >= 0 {
			n += i
			break
		}
		n = len(s.buf) - s.pos
		if n > maxRecordBytes {
			return s.skipLongLine()
		}
		more, err := s.fill()
		if err != nil {
			return nil, s.fatal(err)
		}
		if !more {
			s.done = true
			break
		}
	}
	lineNo := s.line
	text := s.buf[s.pos : s.pos+n]
	s.pos += n
	if !s.done {
		s.pos++ // the '\n'
		s.line++
	}
	if n > maxRecordBytes {
		// Found whole, within the last read past the limit.
		return nil, longLine(s.file, lineNo)
	}
	text = bytes.TrimRight(text, "\r")
	if len(bytes.TrimLeft(text, " \t\r")) == 0 {
		return nil, nil
	}
	return s.record(text, lineNo)
}

// skipLongLine drops a line over maxRecordBytes.
func (s *jsonSource) skipLongLine() (*transform.Record, error) {
	lineNo := s.line
	for {
		if i := bytes.IndexByte(s.buf[s.pos:], '\n'); i >= 0 {
			s.pos += i + 1
			s.line++
			break
		}
		s.pos = len(s.buf)
		more, err := s.fill()
		if err != nil {
			return nil, s.fatal(err)
		}
		if !more {
			s.done = true
			break
		}
	}
	return nil, longLine(s.file, lineNo)
}

// longLine is the error of a line over maxRecordBytes.
func longLine(file string, line int) error {
	return &transform.RowError{File: file, Line: line, Err: parseErr("the line is longer than %s, the limit of one record (no DynamoDB item is over 400 KB); it is skipped", infile.LimitText(maxRecordBytes))}
}

// nextValue reads one object of a stream or an array. It returns nil, nil
// at the end.
func (s *jsonSource) nextValue() (*transform.Record, error) {
	more, err := s.skipSpace()
	if err != nil {
		return nil, s.fatal(err)
	}
	if s.mode == jsonArray {
		if !more {
			return nil, s.broken("the array is not closed: a ']' is missing at the end")
		}
		switch c := s.buf[s.pos]; {
		case c == ']':
			s.pos++
			s.mode = jsonStream // only blank space may follow
			if more, err := s.skipSpace(); err != nil {
				return nil, s.fatal(err)
			} else if more {
				return nil, s.broken(fmt.Sprintf("found %q after the array's closing ']'", s.buf[s.pos]))
			}
			s.done = true
			return nil, nil
		case s.afterElem && c == ',':
			s.pos++
			s.afterElem = false
			if more, err := s.skipSpace(); err != nil {
				return nil, s.fatal(err)
			} else if !more {
				return nil, s.broken("the array is not closed: a ']' is missing at the end")
			}
		case s.afterElem:
			return nil, s.broken(fmt.Sprintf("want ',' or ']' after an element of the array, found %q", c))
		}
		if c := s.buf[s.pos]; c == ']' || c == ',' {
			return nil, s.broken(fmt.Sprintf("want an object in the array, found %q", c))
		}
	} else if !more {
		s.done = true
		return nil, nil
	}
	lineNo := s.line
	n, err := s.extent(false)
	if err == errSkippedLong {
		s.afterElem = true
		return nil, &transform.RowError{File: s.file, Line: lineNo, Err: parseErr(
			"an object is longer than %s, the limit of one record (no DynamoDB item is over 400 KB); it is skipped", infile.LimitText(maxRecordBytes))}
	}
	if err != nil {
		var xe *extentError
		if errors.As(err, &xe) {
			return nil, s.broken(xe.msg)
		}
		return nil, s.fatal(err)
	}
	text := s.buf[s.pos : s.pos+n]
	s.line += bytes.Count(text, []byte{'\n'})
	s.pos += n
	s.afterElem = true
	if s.mode == jsonStream && text[0] != '{' {
		return nil, s.broken(fmt.Sprintf("found %q where an object should start", text[0]))
	}
	return s.record(text, lineNo)
}

// record decodes one object.
func (s *jsonSource) record(text []byte, lineNo int) (*transform.Record, error) {
	rec := &transform.Record{File: s.file, Line: lineNo}
	if s.opts.KeepRaw {
		rec.Raw = bytes.Clone(text)
	}
	attrs, err := ddbjson.DecodePlainObject(text)
	if err != nil {
		salvageIDs(text, attrs, rec, s.opts)
		return rec, &transform.RowError{File: s.file, Line: lineNo, ID: rec.ID, Err: parseErr("%s", s.where(err, text, lineNo))}
	}
	rec.Attrs = attrs
	if err := takeIDs(rec, s.opts); err != nil {
		return rec, &transform.RowError{File: s.file, Line: lineNo, ID: rec.ID, Err: err}
	}
	return rec, nil
}

// where words a decoding error with the line and column it is at.
func (s *jsonSource) where(err error, text []byte, lineNo int) string {
	var e *ddbjson.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	off := min(e.Offset, len(text))
	before := text[:off]
	line := lineNo + bytes.Count(before, []byte{'\n'})
	col := off - bytes.LastIndexByte(before, '\n')
	msg := e.Msg
	if e.Path != "" {
		msg = fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	if line == lineNo {
		return fmt.Sprintf("column %d: %s", col, msg)
	}
	return fmt.Sprintf("line %d, column %d: %s", line, col, msg)
}

// broken ends the stream: the structure around the objects is wrong, and
// nothing after this point can be trusted.
func (s *jsonSource) broken(msg string) error {
	s.done = true
	return &transform.RowError{File: s.file, Line: s.line, Err: parseErr("%s; reading stops here", msg)}
}

// fatal ends the stream on an error reading the input.
func (s *jsonSource) fatal(err error) error {
	s.done = true
	return infile.NextError(err, s.file, s.line, "")
}

// skipSpace consumes blank space. It returns false at the end of the input.
func (s *jsonSource) skipSpace() (bool, error) {
	for {
		for s.pos < len(s.buf) {
			switch s.buf[s.pos] {
			case '\n':
				s.line++
			case ' ', '\t', '\r':
			default:
				return true, nil
			}
			s.pos++
		}
		more, err := s.fill()
		if !more || err != nil {
			return false, err
		}
	}
}

// extent returns the length of the JSON value at s.pos, reading as much of
// the input as it takes. It finds where the value ends (the bracket that
// closes it, outside strings), not whether it is valid: decoding tells that.
// With oneLine, a value that does not end on its line is an error.
//
// A value over maxRecordBytes is not kept: without oneLine, extent reads on
// to its end, consuming it (and counting its lines), and returns
// errSkippedLong; with oneLine, it is an extentError.
func (s *jsonSource) extent(oneLine bool) (int, error) {
	depth := 0
	inString, escaped := false, false
	scalar := false
	i := 0
	tooLong := &extentError{fmt.Sprintf("an object is longer than %s, the limit of one record, or a closing bracket is missing", infile.LimitText(maxRecordBytes))}
	skipping := false // over the limit: what is scanned is consumed
	// consume drops the first n bytes of the window, counting their lines.
	consume := func(n int) {
		s.line += bytes.Count(s.buf[s.pos:s.pos+n], []byte{'\n'})
		s.pos += n
	}
	// end is the extent n, unless the value is over the limit.
	end := func(n int) (int, error) {
		switch {
		case skipping || n > maxRecordBytes && !oneLine:
			consume(n)
			return 0, errSkippedLong
		case n > maxRecordBytes:
			return 0, tooLong
		}
		return n, nil
	}
	for {
		for ; s.pos+i < len(s.buf); i++ {
			c := s.buf[s.pos+i]
			switch {
			case inString:
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
					if depth == 0 {
						return end(i + 1)
					}
				case c == '\n':
					if oneLine {
						return 0, &extentError{"the line ends inside a string"}
					}
				}
			case i == 0 && c != '{' && c != '[' && c != '"':
				scalar = true
			case scalar:
				switch c {
				case ',', ']', '}', ' ', '\t', '\r', '\n':
					return end(i)
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					return end(i + 1)
				}
			case c == '\n' && oneLine:
				return 0, &extentError{"the object does not end on its line"}
			}
		}
		if i > maxRecordBytes || skipping {
			if oneLine {
				return 0, tooLong
			}
			skipping = true
			consume(i)
			i = 0
		}
		more, err := s.fill()
		if err != nil {
			return 0, err
		}
		if !more {
			if scalar {
				return end(i)
			}
			return 0, &extentError{"the input ends inside an object: a closing bracket or quote is missing"}
		}
	}
}

// errSkippedLong is extent's answer for a value over maxRecordBytes, which
// it has read past without keeping it.
var errSkippedLong = errors.New("skipped a value over the limit")

// fill reads more input into buf, keeping buf[pos:]. It returns false at the
// end of the input.
func (s *jsonSource) fill() (bool, error) {
	if s.eof {
		return false, nil
	}
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:])
		s.buf = s.buf[:n]
		s.pos = 0
	}
	if cap(s.buf)-len(s.buf) < readBufferSize/2 {
		grown := make([]byte, len(s.buf), max(2*cap(s.buf), len(s.buf)+readBufferSize))
		copy(grown, s.buf)
		s.buf = grown
	}
	for {
		n, err := s.in.R.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err == io.EOF {
			s.eof = true
			return n > 0, nil
		}
		if err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
}

func (s *jsonSource) Close() error { return s.in.Close() }

// extentError is a value whose end cannot be found.
type extentError struct{ msg string }

func (e *extentError) Error() string { return e.msg }

// salvageIDs reads the id and the parent of an object that cannot be
// decoded, from the members read before the problem or, when encoding/json
// can read the object, from all of it, so that a bad row still names its id
// and its subtree can be rejected with it.
func salvageIDs(text []byte, partial map[string]types.AttributeValue, rec *transform.Record, opts SourceOptions) {
	rec.ID, _ = takeKey(partial, opts.idField(), "id")
	rec.Parent, _ = takeKey(partial, opts.parentField(), "parent")
	var fields map[string]json.RawMessage
	if json.Unmarshal(text, &fields) != nil {
		return
	}
	key := func(name string) string {
		raw := bytes.TrimSpace(fields[name])
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s
			}
		}
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			return string(raw)
		}
		return ""
	}
	if rec.ID == "" {
		rec.ID = key(opts.idField())
	}
	if rec.Parent == "" {
		rec.Parent = key(opts.parentField())
	}
}
