#include "textflag.h"

// func scan64(p *byte, comma uint64) (commas, quotes, newlines, high uint64)
//
// Bit k of each result is set when byte k of the 64 at p is, in order:
// the delimiter (comma holds it in each of its bytes), a double quote, a
// line feed, or a byte of 128 or more. SSE2, which every amd64 has:
// four loads of 16 bytes, each compared against the three bytes.
TEXT ·scan64(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), SI
	MOVQ comma+8(FP), AX
	MOVQ AX, X8
	PUNPCKLQDQ X8, X8
	MOVQ $0x2222222222222222, AX
	MOVQ AX, X9
	PUNPCKLQDQ X9, X9
	MOVQ $0x0a0a0a0a0a0a0a0a, AX
	MOVQ AX, X10
	PUNPCKLQDQ X10, X10
	XORQ R8, R8
	XORQ R9, R9
	XORQ R10, R10
	XORQ R11, R11

#define BLOCK(off, shift) \
	MOVOU off(SI), X0 \
	MOVOU X0, X1 \
	PCMPEQB X8, X1 \
	PMOVMSKB X1, AX \
	SHLQ $shift, AX \
	ORQ AX, R8 \
	MOVOU X0, X2 \
	PCMPEQB X9, X2 \
	PMOVMSKB X2, BX \
	SHLQ $shift, BX \
	ORQ BX, R9 \
	MOVOU X0, X3 \
	PCMPEQB X10, X3 \
	PMOVMSKB X3, CX \
	SHLQ $shift, CX \
	ORQ CX, R10 \
	PMOVMSKB X0, DX \
	SHLQ $shift, DX \
	ORQ DX, R11

	BLOCK(0, 0)
	BLOCK(16, 16)
	BLOCK(32, 32)
	BLOCK(48, 48)

	MOVQ R8, commas+16(FP)
	MOVQ R9, quotes+24(FP)
	MOVQ R10, newlines+32(FP)
	MOVQ R11, high+40(FP)
	RET
