// Command host is a Go master: it connects to a tracker and runs work on
// its workers through riot's Go client, with each of Riot's forms.
//
//	riotd --memory &                 # a tracker on localhost:2355
//	riot-worker localhost &          # a worker
//	go run ./examples/host --tracker localhost
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/modules"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

func main() {
	addr := flag.String("tracker", "localhost", "the tracker, HOST[:PORT]")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := run(ctx, *addr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr string) error {
	c, err := client.Dial(ctx, addr, client.Options{Name: "host-example"})
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Println("connected as", c.WhoAmI())

	// do-work: a function with a free variable, for several arguments.
	scale := &value.Function{Source: "(x) => x * factor", Env: map[string]any{"factor": 10}}
	var calls []*client.Call
	for i := range 5 {
		call, err := c.DoWork(scale, i)
		if err != nil {
			return err
		}
		calls = append(calls, call)
	}
	for i, call := range calls {
		v, err := c.WaitUntilDone(ctx, call.Key)
		if err != nil {
			return err
		}
		fmt.Printf("do-work %d → %v\n", i, v)
	}

	// do-work/call: a module file, shipped by hash.
	mods := modules.NewCache("scripts")
	call, err := c.DoWorkCall(ctx, mods, "lib/double.js", "double", 21)
	if err != nil {
		return err
	}
	v, err := c.WaitUntilDone(ctx, call.Key)
	if err != nil {
		return err
	}
	fmt.Println("do-work/call double(21) →", v)

	// do-work/eval: source only.
	v, err = c.WaitUntilDone(ctx, c.DoWorkEval("3 + 5").Key)
	if err != nil {
		return err
	}
	fmt.Println("do-work/eval (+ 3 5) →", v)

	// A failing workunit: the error names the worker and keeps the JS
	// error's name, message and stack.
	_, err = c.WaitUntilDone(ctx, c.DoWorkEval("null.x").Key)
	var werr *workunit.Error
	if errors.As(err, &werr) {
		fmt.Printf("failed on worker %s: %s: %s\n", werr.Worker, werr.Name, werr.Message)
	}
	return nil
}
