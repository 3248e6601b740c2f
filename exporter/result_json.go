package exporter

import (
	"fmt"
	"strconv"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records"
)

// AppendResultJSON appends r as one line of query output (SPEC §4), without
// the newline:
//
//	{"id":"CM4","parent_id":"CM2","relative_depth":1,"attributes":{"name":"Engine","qty":1}}
//
// parent_id is left out for a root. A node read through a link (query get
// --follow-links) has "via_link", the link's id, after relative_depth:
//
//	{"id":"CM8","parent_id":"CM4","relative_depth":0,"via_link":"L8","attributes":{…}}
//
// The attributes are plain JSON values, their names in byte order: S a string, N a number with its exact text, BOOL
// a boolean, NULL null, L and the sets arrays, M an object, B (and the
// members of BS) a base64 string. It fails on an attribute with no value or
// a value of a type DynamoDB does not define, naming the attribute.
func AppendResultJSON(dst []byte, r Result) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = ddbjson.AppendString(dst, r.ID)
	if r.Parent != "" {
		dst = append(dst, `,"parent_id":`...)
		dst = ddbjson.AppendString(dst, r.Parent)
	}
	dst = append(dst, `,"relative_depth":`...)
	dst = strconv.AppendInt(dst, int64(r.RelativeDepth), 10)
	if r.Via != "" {
		dst = append(dst, `,"via_link":`...)
		dst = ddbjson.AppendString(dst, r.Via)
	}
	dst = append(dst, `,"attributes":{`...)
	for i, k := range sortedKeys(r.Attrs) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = ddbjson.AppendString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = records.AppendPlainJSON(dst, r.Attrs[k]); err != nil {
			return dst, fmt.Errorf("exporter: node %q, attribute %q: %w", r.ID, k, err)
		}
	}
	return append(dst, "}}"...), nil
}
