package itemdigest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
)

// Diff compares, out of core, the items a job wants in a table with the
// items the table holds, by primary key and digest: each side goes to an
// external sort by key (AppendKey's encoding), and a merge join of the two
// counts the keys wanted but not held, held but not wanted, and held with
// another digest. Memory is the two sorts' budgets, whatever the number of
// items. A Diff is not safe for concurrent use; Close removes its files.
type Diff struct {
	want, have *extsort.Sorter
	rec        []byte
}

// DiffCounts is what a Diff found. Samples holds the keys (KeyOf's
// encoding) of the first few differences, for the message that reports
// them.
type DiffCounts struct {
	Wanted, Held               int64
	Missing, Different, Extra  int64
	MissingKeys, DifferentKeys []string
	ExtraKeys                  []string
}

// Same reports whether the table holds exactly the items wanted.
func (c DiffCounts) Same() bool { return c.Missing+c.Different+c.Extra == 0 }

// diffSamples is how many keys of each kind of difference DiffCounts keeps.
const diffSamples = 3

// NewDiff returns a Diff whose two sorts keep about budget bytes each in
// memory, and write their runs to dir, which must exist.
func NewDiff(dir string, budget int) *Diff {
	return &Diff{want: extsort.New(dir, budget, compareKeyDigest), have: extsort.New(dir, budget, compareKeyDigest)}
}

// compareKeyDigest orders records of a key followed by an 8-byte digest
// by their keys, then by their digests.
func compareKeyDigest(a, b []byte) int {
	if c := bytes.Compare(a[:len(a)-8], b[:len(b)-8]); c != 0 {
		return c
	}
	return bytes.Compare(a[len(a)-8:], b[len(b)-8:])
}

func (d *Diff) add(s *extsort.Sorter, key []byte, digest uint64) error {
	d.rec = binary.BigEndian.AppendUint64(append(d.rec[:0], key...), digest)
	return s.Add(d.rec)
}

// Want adds an item the table should hold: its key (AppendKey) and its
// digest (Digester.Item, or FlatAndAttrs' whole digest).
func (d *Diff) Want(key []byte, digest uint64) error { return d.add(d.want, key, digest) }

// Have adds an item the table holds, as Want does.
func (d *Diff) Have(key []byte, digest uint64) error { return d.add(d.have, key, digest) }

// Compare ends the adding and merge-joins the two sides.
func (d *Diff) Compare() (DiffCounts, error) {
	c := DiffCounts{Wanted: d.want.Records, Held: d.have.Records}
	w, err := d.want.Sort()
	if err != nil {
		return c, err
	}
	defer w.Close()
	h, err := d.have.Sort()
	if err != nil {
		return c, err
	}
	defer h.Close()
	sample := func(keys *[]string, rec []byte) {
		if len(*keys) < diffSamples {
			*keys = append(*keys, string(rec[:len(rec)-8]))
		}
	}
	a, aok := w.Next()
	b, bok := h.Next()
	for aok || bok {
		cmp := 0
		switch {
		case !bok:
			cmp = -1
		case !aok:
			cmp = 1
		default:
			cmp = bytes.Compare(a[:len(a)-8], b[:len(b)-8])
		}
		switch {
		case cmp < 0:
			c.Missing++
			sample(&c.MissingKeys, a)
			a, aok = w.Next()
		case cmp > 0:
			c.Extra++
			sample(&c.ExtraKeys, b)
			b, bok = h.Next()
		default:
			if !bytes.Equal(a[len(a)-8:], b[len(b)-8:]) {
				c.Different++
				sample(&c.DifferentKeys, b)
			}
			a, aok = w.Next()
			b, bok = h.Next()
		}
	}
	if err := w.Err(); err != nil {
		return c, err
	}
	return c, h.Err()
}

// Close removes the sorts' files.
func (d *Diff) Close() {
	d.want.Close()
	d.have.Close()
}

// KeysText names the items of keys (KeyOf's encoding) by their key
// attributes, for a message: Key="a¦b" Child="c", ...
func KeysText(spec layouts.TableSpec, keys []string) string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		item, err := DecodeKey(spec, k)
		if err != nil {
			out = append(out, fmt.Sprintf("%q", k))
			continue
		}
		v := spec.PK.Name + "=" + keyValueText(item[spec.PK.Name])
		if spec.SK != nil {
			v += " " + spec.SK.Name + "=" + keyValueText(item[spec.SK.Name])
		}
		out = append(out, v)
	}
	return strings.Join(out, ", ")
}

// keyValueText is a key attribute's value as a message shows it.
func keyValueText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("%q", v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("0x%x", v.Value)
	}
	return "?"
}
