package jsvalue

import "testing"

func benchRealm(b *testing.B) *testRuntime {
	return newTestRuntime(b)
}

// BenchmarkCodecJS_Float64Array8MB encodes and decodes an 8 MB
// Float64Array on the JavaScript side (target: ≥ 1 GB/s each way).
func BenchmarkCodecJS_EncodeFloat64Array8MB(b *testing.B) {
	rl := benchRealm(b)
	v := runJS(b, rl, "new Float64Array(1 << 20).map((_, i) => i * 0.5)")
	b.SetBytes(8 << 20)
	for b.Loop() {
		if _, err := rl.enc.EncodeValue(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCodecJS_DecodeFloat64Array8MB(b *testing.B) {
	rl := benchRealm(b)
	data := encodeJS(b, rl, runJS(b, rl, "new Float64Array(1 << 20).map((_, i) => i * 0.5)"))
	b.SetBytes(8 << 20)
	for b.Loop() {
		if _, err := rl.dec.DecodeValue(data); err != nil {
			b.Fatal(err)
		}
	}
}

const object10000 = "(() => { const o = {}; for (let i = 0; i < 10000; i++) o['field' + i] = i % 3 ? i : 'v' + i; return o })()"

func BenchmarkCodecJS_EncodeObject10000Fields(b *testing.B) {
	rl := benchRealm(b)
	v := runJS(b, rl, object10000)
	data := encodeJS(b, rl, v)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := rl.enc.EncodeValue(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCodecJS_DecodeObject10000Fields(b *testing.B) {
	rl := benchRealm(b)
	data := encodeJS(b, rl, runJS(b, rl, object10000))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := rl.dec.DecodeValue(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecJS_EncodeArray100000 encodes a dense array of 100,000
// numbers: the check for holes and non-index properties reads its keys once.
func BenchmarkCodecJS_EncodeArray100000(b *testing.B) {
	rl := benchRealm(b)
	v := runJS(b, rl, "Array.from({length: 100000}, (_, i) => i)")
	data := encodeJS(b, rl, v)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := rl.enc.EncodeValue(v); err != nil {
			b.Fatal(err)
		}
	}
}
