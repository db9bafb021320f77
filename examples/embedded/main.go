// Command embedded runs work without riotd or workers started by hand: it
// starts the embedded default (a tracker and a worker in this process), as
// riot-worker eval does for job scripts, and uses it through the Go client.
//
//	go run ./examples/embedded
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/value"
)

func main() {
	ctx := context.Background()
	emb, err := job.StartEmbedded(ctx, job.EmbeddedOptions{Workers: -1}) // one slot per CPU
	if err != nil {
		log.Fatal(err)
	}
	defer emb.Stop()

	c, err := client.Dial(ctx, emb.Addr(), client.Options{Name: "embedded-example"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The seed's first example, from Go: ten workunits that sleep, then
	// return 10 * i.
	fn := &value.Function{Source: "(i) => { sleep(0.5); return 10 * i }"}
	var calls []*client.Call
	for i := range 10 {
		call, err := c.DoWork(fn, i)
		if err != nil {
			log.Fatal(err)
		}
		calls = append(calls, call)
	}
	var results []any
	for _, call := range calls {
		v, err := c.WaitUntilDone(ctx, call.Key)
		if err != nil {
			log.Fatal(err)
		}
		results = append(results, v)
	}
	fmt.Println(results)
	fmt.Println("Complete")
}
