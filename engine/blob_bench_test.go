package engine

import (
	"context"
	"strconv"
	"testing"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// largeValues are captured values large enough to travel as blobs, as
// benchmarks and tests use them.
func largeValues() []struct {
	name string
	v    any
	read string // an expression reading big, the captured value
} {
	nums := make([]any, 100_000)
	for i := range nums {
		nums[i] = float64(i) * 0.5
	}
	words := make([]any, 100_000)
	for i := range words {
		words[i] = "word" + strconv.Itoa(i)
	}
	obj := make(map[string]any, 10_000)
	for i := range 10_000 {
		obj["field"+strconv.Itoa(i)] = float64(i)
	}
	rows := make([]any, 10_000)
	for i := range rows {
		rows[i] = map[string]any{"id": float64(i), "name": "row" + strconv.Itoa(i)}
	}
	return []struct {
		name string
		v    any
		read string
	}{
		{"Array100kNumbers", nums, "big[7]"},
		{"Set100kStrings", &value.Set{Values: words}, "big.has('word7')"},
		{"Object10kFields", obj, "big.field7"},
		{"Array10kObjects", rows, "big[7].name"},
	}
}

// BenchmarkEngine_CachedBlobValue runs a workunit that captures a large
// value stored as a blob, which its runtime has seen before: the
// per-workunit cost of a large captured value.
func BenchmarkEngine_CachedBlobValue(b *testing.B) {
	for _, lv := range largeValues() {
		b.Run(lv.name, func(b *testing.B) {
			e := newEngine(b, Options{Slots: 1})
			data, err := value.Marshal(lv.v)
			if err != nil {
				b.Fatal(err)
			}
			src := blob.Map{}
			h := src.Put(data)
			payload, err := value.Marshal([]any{&value.Function{Source: "() => " + lv.read, Env: map[string]any{"big": value.BlobRef(h)}}})
			if err != nil {
				b.Fatal(err)
			}
			req := Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Blobs: src}
			ctx := context.Background()
			if _, err := e.Run(ctx, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Run(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
