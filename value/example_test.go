package value_test

import (
	"context"
	"fmt"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
)

func ExampleMarshal() {
	type point struct {
		X, Y float64
		Tag  string `json:"tag,omitempty"`
	}
	b, err := value.Marshal([]any{
		point{X: 1, Y: 2},
		map[string]any{"when": time.UnixMilli(1500), "samples": []float32{0.5, 1}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%x\n", b)
	// Output:
	// 82a2615801615902a26773616d706c6573d855480000003f0000803f647768656ec1fb3ff8000000000000
}

func ExampleUnmarshal() {
	b, _ := value.Marshal(map[string]any{"n": 42, "list": []any{"a", nil}, "big": int64(1) << 40})
	v, err := value.Unmarshal(b)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := v.(map[string]any)
	fmt.Println(m["n"].(float64)+1, m["list"], m["big"])
	// Output: 43 [a <nil>] 1.099511627776e+12
}

func ExampleEncoder() {
	args := []any{1, map[string]any{"onDone": func() {}}}
	_, err := value.Encoder{Root: "args"}.Encode(args)
	fmt.Println(err)
	// Output: args[1].onDone: a function cannot be sent to a worker
}

func ExampleDecoder() {
	// A large value travels once, as a blob; documents refer to it by hash.
	blobs := blob.Map{}
	dict, _ := value.Marshal([]any{"apple", "pear"})
	h := blobs.Put(dict)

	doc, _ := value.Marshal(map[string]any{"dict": value.BlobRef(h), "n": 3})
	v, err := value.Decoder{Blobs: blobs}.Decode(context.Background(), doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.(map[string]any)["dict"])
	// Output: [apple pear]
}
