package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/workunit"
)

// A master submits many workunits at once (pipelined) and collects their
// results; a failed workunit's error names the worker that raised it.
func Example() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "alfred", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	calls := make([]*client.Call, 100)
	for i := range calls {
		spec := &workunit.Spec{Kind: workunit.Eval, Name: "eval", Source: fmt.Sprintf("%d * %d", i, i)}
		calls[i] = c.Submit(spec, workunit.Options{})
	}
	for _, k := range calls {
		out, err := k.Wait(ctx)
		var werr *workunit.Error
		if errors.As(err, &werr) {
			log.Fatalf("worker %s: %s: %s\n%s", werr.Worker, werr.Name, werr.Message, werr.Stack)
		}
		if err != nil {
			log.Fatal(err)
		}
		v, _ := out.Value()
		fmt.Println(v, "from", out.Worker)
	}
}

// A client can take work itself, as Riot's low-level client could.
func ExampleClient_WaitForWork() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "alfred:2355", client.Options{Slots: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for {
		a, err := c.WaitForWork(ctx)
		if err != nil {
			log.Fatal(err)
		}
		spec, err := a.Decode()
		if err != nil {
			_ = c.CompleteWorkunit(a, nil, err)
			continue
		}
		_ = c.CompleteWorkunit(a, len(spec.Source), nil)
	}
}

// Riot's for/work: one workunit per item, results in order.
func ExampleForWork() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "alfred", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	squares, err := client.ForWork(ctx, c, 10, func(i int) *workunit.Spec {
		return &workunit.Spec{Kind: workunit.Eval, Name: "eval", Source: fmt.Sprintf("%d * 10", i)}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(squares)
}
