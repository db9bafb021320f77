package job_test

import (
	"context"
	"fmt"
	"log"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/value"
)

// A Go program runs work on the embedded default: a tracker and a worker
// in its own process, reached through the Go client as any tracker is.
func ExampleStartEmbedded() {
	ctx := context.Background()
	emb, err := job.StartEmbedded(ctx, job.EmbeddedOptions{Workers: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer emb.Stop()

	c, err := client.Dial(ctx, emb.Addr(), client.Options{Name: "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	square := &value.Function{Source: "(x) => x * x"}
	var calls []*client.Call
	for i := 1; i <= 4; i++ {
		call, err := c.DoWork(square, i)
		if err != nil {
			log.Fatal(err)
		}
		calls = append(calls, call)
	}
	for _, call := range calls {
		v, err := c.WaitUntilDone(ctx, call.Key)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v)
	}
	// Output:
	// 1
	// 4
	// 9
	// 16
}
