package value

import (
	"strconv"
	"testing"
)

const eightMB = 8 << 20

func float64Array8MB() []float64 {
	s := make([]float64, eightMB/8)
	for i := range s {
		s[i] = float64(i) * 1.5
	}
	return s
}

func object10000Fields() map[string]any {
	m := make(map[string]any, 10000)
	for i := range 10000 {
		switch i % 4 {
		case 0:
			m["field"+strconv.Itoa(i)] = float64(i)
		case 1:
			m["field"+strconv.Itoa(i)] = "value " + strconv.Itoa(i)
		case 2:
			m["field"+strconv.Itoa(i)] = i%3 == 0
		default:
			m["field"+strconv.Itoa(i)] = float64(i) + 0.25
		}
	}
	return m
}

func BenchmarkMarshalFloat64Array8MB(b *testing.B) {
	s := float64Array8MB()
	b.SetBytes(eightMB)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMarshalFloat64Array8MB(b *testing.B) {
	s := float64Array8MB()
	buf := make([]byte, 0, eightMB+64)
	b.SetBytes(eightMB)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendMarshal(buf[:0], s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalFloat64Array8MB(b *testing.B) {
	doc, err := Marshal(float64Array8MB())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(eightMB)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalObject10000Fields(b *testing.B) {
	m := object10000Fields()
	doc, err := Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalObject10000Fields(b *testing.B) {
	doc, err := Marshal(object10000Fields())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalArgs encodes what a Go master's DoWork sends: a few
// arguments, one of them a small object.
func BenchmarkMarshalArgs(b *testing.B) {
	args := []any{42, "item-17", map[string]any{"lo": 0, "hi": 1000, "tags": []any{"a", "b"}}}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendMarshal(buf[:0], args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEncodeArrayDoWork encodes DoWork's payload, [fn, 5], as
// the client does: from a reused list into a reused buffer.
func BenchmarkAppendEncodeArrayDoWork(b *testing.B) {
	items := []any{&Function{Source: "(i) => i + 1"}, 5}
	enc := Encoder{Root: "args"}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = enc.AppendEncodeArray(buf[:0], items); err != nil {
			b.Fatal(err)
		}
	}
}
