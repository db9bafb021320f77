// Command embed evaluates JavaScript in process with riot's engine: an eval
// workunit, a function with a captured variable, and a CommonJS module call,
// then shows how a failing workunit's error reads.
//
//	go run ./examples/embed
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

func main() {
	ctx := context.Background()
	// A plain engine: the sandbox and riot's globals, no GPU bindings
	// (add Bindings: []engine.Binding{jsgpu.Binding(drv)} and GPUs:
	// jsgpu.Ordinals(drv) for those, as workers do).
	eng, err := engine.New(engine.Options{Slots: 2, Timeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()

	// do-work/eval: the value of the last expression is the result.
	res, err := eng.Eval(ctx, "console.log('adding'); 3 + 5")
	if err != nil {
		log.Fatal(err)
	}
	v, _ := res.Decode()
	lines, _ := res.Console.Lines()
	fmt.Printf("eval: %v (console: %q)\n", v, lines[0].Text)

	// A function with a free variable, as a master's doWork sends it.
	scale := &value.Function{Source: "(x) => x * factor", Env: map[string]any{"factor": 10}}
	res, err = eng.CallFunc(ctx, scale, 4.2)
	if err != nil {
		log.Fatal(err)
	}
	v, _ = res.Decode()
	fmt.Printf("fn: %v\n", v)

	// do-work/call: a module shipped by content hash.
	modules := blob.Map{}
	mod := &workunit.Module{Path: "do-work-call.js", Source: "exports.double = (x) => x * 2;"}
	b, err := mod.MarshalBinary()
	if err != nil {
		log.Fatal(err)
	}
	h := modules.Put(b)
	for x := range 3 {
		res, err = eng.Call(ctx, modules, h, "double", x)
		if err != nil {
			log.Fatal(err)
		}
		v, _ = res.Decode()
		fmt.Printf("call double(%d): %v\n", x, v)
	}

	// A workunit that throws gives a *workunit.Error with the JS error.
	_, err = eng.Eval(ctx, "function check(x) {\n  if (x < 0) throw new RangeError('negative: ' + x)\n}\ncheck(-1)")
	var werr *workunit.Error
	if errors.As(err, &werr) {
		fmt.Printf("error: %s\n%s\n", werr.Name, werr.Stack)
	}
}
