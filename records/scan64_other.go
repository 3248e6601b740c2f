//go:build !amd64

package records

// scan64 is scan64Go where there is no assembly for it.
func scan64(p *byte, comma uint64) (commas, quotes, newlines, high uint64) {
	return scan64Go(p, comma)
}
