package auditlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// lines reads an input a line at a time, each line one record; an input
// whose first line opens a JSON document it does not close (an aws CLI or
// gcloud export, pretty-printed) is read as a stream of documents instead.
func (r *reader) lines(br *bufio.Reader) error {
	in := r.cur
	var long []byte
	for first := true; ; {
		line, tooLong, last, err := nextLine(br, &long, r.maxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) > 0 || tooLong {
			in.lines++
			if in.lines%4096 == 0 && r.ctx.Err() != nil {
				return r.ctx.Err()
			}
			switch {
			case tooLong:
				r.bad()
			case first && opensDocument(trimmed):
				// Read again from this line on, as documents.
				head := append(append([]byte{}, line...), '\n')
				return r.documents(io.MultiReader(bytes.NewReader(head), br))
			case r.record(trimmed, 0):
			case last:
				// A log still being written ends mid-line.
				in.truncated = true
			default:
				r.bad()
			}
			first = false
		}
		if err != nil {
			return nil
		}
	}
}

// nextLine returns the next line, without copying it where it fits the
// buffer; a line longer than max is discarded and reported tooLong; last
// says it ended at the end of input without a newline.
func nextLine(br *bufio.Reader, long *[]byte, max int) (line []byte, tooLong, last bool, err error) {
	frag, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return frag, false, err != nil && len(frag) > 0, err
	}
	*long = append((*long)[:0], frag...)
	for errors.Is(err, bufio.ErrBufferFull) {
		frag, err = br.ReadSlice('\n')
		if !tooLong && len(*long)+len(frag) > max {
			tooLong, *long = true, (*long)[:0]
		}
		if !tooLong {
			*long = append(*long, frag...)
		}
	}
	if tooLong {
		return nil, true, false, err
	}
	return *long, false, err != nil, err
}

// opensDocument: the first line of a pretty-printed document ("{", "[",
// `{"events": [`), not a whole value.
func opensDocument(line []byte) bool {
	if line[0] != '{' && line[0] != '[' {
		return false
	}
	end := line[len(line)-1]
	return (end == '{' || end == '[') && !json.Valid(line)
}

func (r *reader) bad() {
	in := r.cur
	in.bad++
	if in.firstBad == 0 {
		in.firstBad = in.lines
	}
}

// documents reads a stream of JSON values: an array's elements and the
// arrays of an object's "events", "records" and "items" one at a time, so
// that an export of millions of events is never held whole.
func (r *reader) documents(src io.Reader) error {
	dec := json.NewDecoder(src)
	for {
		tok, err := dec.Token()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return r.documentError(err)
		}
		r.cur.lines++
		switch tok {
		case json.Delim('['):
			err = r.elements(dec)
		case json.Delim('{'):
			err = r.object(dec)
		default:
			r.skip()
		}
		if err != nil {
			return r.documentError(err)
		}
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
	}
}

// documentError counts a document that ends early as truncated, any other
// syntax error as bad: the rest of that input cannot be told apart.
func (r *reader) documentError(err error) error {
	var syntax *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		r.cur.truncated = true
	case errors.As(err, &syntax):
		r.bad()
	case r.ctx.Err() != nil:
		return r.ctx.Err()
	default:
		return err
	}
	return nil
}

// elements reads an array's elements, each a record, and its closing "]".
func (r *reader) elements(dec *json.Decoder) error {
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		r.cur.lines++
		r.record(raw, 0)
	}
	_, err := dec.Token()
	return err
}

// object reads one object: arrays of records stream; the other members are
// kept and read as one record at its end (a single event, pretty-printed).
func (r *reader) object(dec *json.Decoder) error {
	rest := []byte{'{'}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := key.(string)
		if name == "events" || name == "records" || name == "items" {
			if tok, err := dec.Token(); err != nil {
				return err
			} else if tok == json.Delim('[') {
				if err := r.elements(dec); err != nil {
					return err
				}
				continue
			} else {
				// Not an array: not an envelope's; count what it held.
				r.skip()
				if d, ok := tok.(json.Delim); ok && d == '{' {
					if err := skipValue(dec); err != nil {
						return err
					}
				}
				continue
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		k, _ := json.Marshal(name)
		rest = append(append(append(rest, k...), ':'), v...)
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if len(rest) > 1 {
		r.record(append(rest, '}'), 0)
	}
	return nil
}

// skipValue reads the rest of an object or array whose opening was read.
func skipValue(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}
