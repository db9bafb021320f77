package jsvalue

import "github.com/dop251/goja"

// Items returns what iterating v yields (for...of, Array.from), on rt,
// whose intrinsics in are: riot.forWork's items, riot.map's.
//
// A plain dense array (DenseArray) iterated the built-in way, with
// Array.prototype[Symbol.iterator] and %ArrayIteratorPrototype%.next as
// they were when the runtime started, has its elements read in order
// rather than stepped through: that iteration would read them, and only
// them, with nothing a script could see (no getter runs, no element
// changes meanwhile), at a fraction of the cost (an iterator result and
// a try frame per element: 0.8 s of a forWork over a million items).
// Anything else (holes, a Proxy, a Set, a generator, a patched iterator)
// is iterated as the language says. An exception from the iteration
// panics, as goja.Runtime.ForOf does.
func (in *Intrinsics) Items(rt *goja.Runtime, v goja.Value) []goja.Value {
	if o, ok := v.(*goja.Object); ok {
		if n, dense := in.DenseArray(o); dense && o.GetSymbol(goja.SymIterator).SameAs(in.ArrayValues) && in.ArrayIterProto.Get("next").SameAs(in.ArrayIterNext) {
			items := make([]goja.Value, n)
			for i := range items {
				items[i] = o.Get(Index(i))
			}
			return items
		}
	}
	var items []goja.Value
	rt.ForOf(v, func(item goja.Value) bool {
		items = append(items, item)
		return true
	})
	return items
}
