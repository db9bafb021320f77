package wire

import (
	"testing"
	"time"
)

// benchAssigns returns n Assigns as the tracker sends them: a spec of 100
// bytes (a small eval or call workunit) in one realm.
func benchAssigns(n int) []Msg {
	spec := make([]byte, 100)
	for i := range spec {
		spec[i] = byte(i)
	}
	msgs := make([]Msg, n)
	for i := range msgs {
		msgs[i] = &Assign{Key: testKey(string(rune('a' + i%26))), Token: 1767225600000000000 + uint64(i),
			Spec: spec, Realm: "laptop-1", Timeout: 30 * time.Second}
	}
	return msgs
}

// benchDones returns n Dones as a worker sends them: a small result, no
// console output.
func benchDones(n int) []Msg {
	msgs := make([]Msg, n)
	for i := range msgs {
		msgs[i] = &Done{Key: testKey(string(rune('a' + i%26))), Token: 1767225600000000000 + uint64(i),
			Result: []byte{0x19, 0x01, 0xf4}, Elapsed: 42 * time.Microsecond}
	}
	return msgs
}

func benchEncode(b *testing.B, msgs []Msg) {
	var enc Encoder
	for _, m := range msgs {
		_ = enc.Add(m)
	}
	b.SetBytes(int64(len(enc.Frame())))
	enc.Reset()
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			if err := enc.Add(m); err != nil {
				b.Fatal(err)
			}
		}
		_ = enc.Frame()
		enc.Reset()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(msgs)), "ns/msg")
}

func benchDecode(b *testing.B, msgs []Msg) {
	frame, err := Encode(msgs...)
	if err != nil {
		b.Fatal(err)
	}
	var dec Decoder
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := dec.Decode(frame)
		if err != nil || len(got) != len(msgs) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(msgs)), "ns/msg")
}

func BenchmarkEncode100Assign(b *testing.B) { benchEncode(b, benchAssigns(100)) }

func BenchmarkDecode100Assign(b *testing.B) { benchDecode(b, benchAssigns(100)) }

func BenchmarkEncode100Done(b *testing.B) { benchEncode(b, benchDones(100)) }

func BenchmarkDecode100Done(b *testing.B) { benchDecode(b, benchDones(100)) }

// BenchmarkDecodeFresh100Assign measures the function Decode, which
// allocates new messages for every frame.
func BenchmarkDecodeFresh100Assign(b *testing.B) {
	frame, err := Encode(benchAssigns(100)...)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/msg")
}
