package records

// scan64 finds the delimiters, quotes, line feeds and bytes of 128 or more
// among the 64 bytes at p, as scan64Go does (scan64_amd64.s).
//
//go:noescape
func scan64(p *byte, comma uint64) (commas, quotes, newlines, high uint64)
