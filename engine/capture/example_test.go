package capture_test

import (
	"fmt"

	"github.com/dop251/goja"
	"github.com/riot-go/riot/engine/capture"
)

func ExampleInstrument() {
	src := `const dictionary = new Set(['ab', 'cd', 'abcd']);
function isWord(w) { return dictionary.has(w) }
const pairsOf = (first) => [...dictionary].filter((second) => isWord(first + second));`

	s, err := capture.Instrument("dict.js", src, capture.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Source)
	for _, f := range s.Funcs {
		fmt.Printf("%d %s %q line %d: free %v, globals %v\n", f.ID, f.Kind, f.Name, f.Line, f.Free, f.Globals)
	}
	// Output:
	// void __riot_capture(0,()=>[dictionary],isWord);const dictionary = new Set(['ab', 'cd', 'abcd']);
	// function isWord(w) { return dictionary.has(w) }
	// const pairsOf = __riot_capture(1,()=>[dictionary,isWord],{pairsOf:(first) => [...dictionary].filter(__riot_capture(2,()=>[isWord,first],(second) => isWord(first + second)))}.pairsOf);
	// 0 function "isWord" line 2: free [dictionary], globals []
	// 1 arrow "pairsOf" line 3: free [dictionary isWord], globals []
	// 2 arrow "" line 3: free [isWord first], globals []
}

// A hook that records registrations, and a doWork that reads the captured
// values when it is called.
func ExampleInstrument_hook() {
	s, err := capture.Instrument("job.js", `
let rate = 2;
const cost = (n) => n * rate;
rate = 3;
doWork(cost);`, capture.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	type registration struct {
		id     int64
		getter goja.Callable
	}
	rt := goja.New()
	registry := map[*goja.Object]registration{}
	_ = rt.Set(capture.DefaultHook, func(id int64, getter goja.Value, value *goja.Object) *goja.Object {
		get, _ := goja.AssertFunction(getter) // nil when there are no free variables
		registry[value] = registration{id: id, getter: get}
		return value
	})
	_ = rt.Set("doWork", func(fn *goja.Object) {
		r := registry[fn]
		f := s.Funcs[r.id]
		values, _ := r.getter(goja.Undefined())
		fmt.Printf("ship %s with %v = %v\n", f.Source, f.Free, values.Export())
	})
	if _, err := rt.RunScript("job.js", s.Source); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ship (n) => n * rate with [rate] = [3]
}
