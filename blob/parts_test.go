package blob

import (
	"bytes"
	"testing"
)

func TestParts_SameAsOneSlice(t *testing.T) {
	whole := make([]byte, 1000)
	for i := range whole {
		whole[i] = byte(i * 7)
	}
	for _, cuts := range [][]int{{}, {0}, {3}, {3, 3}, {1, 500, 999}, {1000}, {0, 1000}} {
		var p Parts
		prev := 0
		for _, c := range cuts {
			p = append(p, whole[prev:c])
			prev = c
		}
		p = append(p, whole[prev:])
		if p.Len() != len(whole) {
			t.Fatalf("cuts %v: Len %d, want %d", cuts, p.Len(), len(whole))
		}
		if p.Sum() != Sum(whole) {
			t.Fatalf("cuts %v: Sum differs from Sum of the whole", cuts)
		}
		if !bytes.Equal(p.Bytes(), whole) {
			t.Fatalf("cuts %v: Bytes differ", cuts)
		}
		for _, r := range [][2]int{{0, 0}, {0, 1000}, {2, 4}, {3, 600}, {499, 501}, {999, 1000}, {1000, 1000}} {
			if got := p.Slice(r[0], r[1]); !bytes.Equal(got, whole[r[0]:r[1]]) {
				t.Fatalf("cuts %v: Slice(%d, %d) = %d bytes, differ", cuts, r[0], r[1], len(got))
			}
		}
	}
}

func TestParts_SliceWithinAPartIsNotACopy(t *testing.T) {
	body := make([]byte, 100)
	p := Parts{[]byte{1, 2}, body, []byte{3}}
	s := p.Slice(10, 20)
	s[0] = 42
	if body[8] != 42 {
		t.Fatal("Slice within one part copied it")
	}
}
