// Package swar holds the word-at-a-time ("SIMD within a register") pieces
// that the CSV reader, the forest and the DynamoDB JSON encoder share: a
// byte's bit patterns repeated across a 64-bit word, and the test for its
// zero bytes.
package swar

const (
	LSBs  uint64 = 0x0101010101010101 // the low bit of each byte: LSBs*c repeats the byte c
	MSBs  uint64 = 0x8080808080808080 // the high bit of each byte
	Low7s uint64 = 0x7f7f7f7f7f7f7f7f // the other seven
)

// ZeroBytes has the high bit of each byte of x that is zero set, and no
// other bit: (x & 0x7f) + 0x7f has the high bit set when the low seven
// bits are not all zero, and never carries into the next byte.
func ZeroBytes(x uint64) uint64 {
	return ^((x&Low7s + Low7s) | x | Low7s)
}
