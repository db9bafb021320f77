package engine

import (
	"fmt"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// sharedSets lets the workunits of a worker's realm share one Set per
// blob of primitives, the costliest kind of blob value to copy (goja's
// Set insertions: about 0.5 µs an element), while each workunit still sees
// a value of its own. A Set's contents change only through add, delete
// and clear, which the realm wraps before any user code runs: a workunit
// that calls one of them on a shared Set marks it, and so does one that
// gives it own properties, another prototype or freezes it (checked when
// the workunit ends). A marked Set is the last workunit's alone: the realm
// drops it, and the next workunit gets a fresh copy. So writes work within
// a workunit and never reach the next one, and a workunit that only reads
// (scripts/dict.js's dictionary) costs nothing per workunit.
type sharedSets struct {
	// of maps each shared Set to its blob.
	of map[*goja.Object]*blobBytes
	// touched reports whether a Set no longer stands as it was made: own
	// properties, another prototype, not extensible.
	touched goja.Callable
}

// installSharedSets wraps Set.prototype's add, delete and clear in rl so
// that a call on a shared Set marks it. The wrappers are Go functions, as
// the built-ins are, with the built-ins' names and lengths.
func (rl *realm) installSharedSets() error {
	ss := &sharedSets{of: make(map[*goja.Object]*blobBytes)}
	ctor, ok := rl.rt.Get("Set").(*goja.Object)
	if !ok {
		return fmt.Errorf("engine: wrapping Set's methods: no Set")
	}
	proto, ok := ctor.Get("prototype").(*goja.Object)
	if !ok {
		return fmt.Errorf("engine: wrapping Set's methods: no Set.prototype")
	}
	for _, m := range []struct {
		name   string
		length int
	}{{"add", 1}, {"delete", 1}, {"clear", 0}} {
		orig, ok := goja.AssertFunction(proto.Get(m.name))
		if !ok {
			return fmt.Errorf("engine: wrapping Set's methods: Set.prototype.%s is not a function", m.name)
		}
		w := rl.rt.ToValue(func(call goja.FunctionCall) goja.Value {
			if len(ss.of) > 0 {
				if o, ok := call.This.(*goja.Object); ok {
					if b := ss.of[o]; b != nil {
						b.setWritten = true
					}
				}
			}
			v, err := orig(call.This, call.Arguments...)
			if err != nil {
				panic(err) // the built-in's own exception (a TypeError on a non-Set), thrown on
			}
			return v
		}).(*goja.Object)
		if err := w.DefineDataProperty("name", rl.rt.ToValue(m.name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return fmt.Errorf("engine: wrapping Set.prototype.%s: %w", m.name, err)
		}
		if err := w.DefineDataProperty("length", rl.rt.ToValue(m.length), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return fmt.Errorf("engine: wrapping Set.prototype.%s: %w", m.name, err)
		}
		if err := proto.DefineDataProperty(m.name, w, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return fmt.Errorf("engine: wrapping Set.prototype.%s: %w", m.name, err)
		}
	}
	v, err := setTouchedScript.Run(rl.rt)
	if err != nil {
		return fmt.Errorf("engine: wrapping Set's methods: %w", err)
	}
	if ss.touched, ok = goja.AssertFunction(v); !ok {
		return fmt.Errorf("engine: wrapping Set's methods: no check")
	}
	rl.sets = ss
	return nil
}

// share makes set the shared Set of blob b.
func (ss *sharedSets) share(b *blobBytes, set *goja.Object) {
	b.set, b.setWritten = set, false
	ss.of[set] = b
}

// forget stops sharing b's Set, if it has one.
func (ss *sharedSets) forget(b *blobBytes) {
	if b.set != nil {
		delete(ss.of, b.set)
		b.set, b.setWritten = nil, false
	}
}

// changed reports whether b's shared Set is no longer as it was made:
// written through add, delete or clear, or given own properties, another
// prototype or frozen. It runs when a workunit ends, for the Sets it
// used, and before a Set is given to a workunit, for the changes made
// through a reference that outlived its workunit.
func (ss *sharedSets) changed(b *blobBytes) bool {
	if !b.setWritten {
		t, err := ss.touched(goja.Undefined(), b.set)
		b.setWritten = err != nil || t.ToBoolean()
	}
	return b.setWritten
}

// settle runs when a workunit ends: the shared Sets it used and changed
// are dropped, so the next workunit gets a fresh copy.
func (ss *sharedSets) settle(used []*blobBytes) {
	for _, b := range used {
		if b.set != nil && ss.changed(b) {
			ss.forget(b)
		}
	}
}

// setTouchedScript makes the check of whether a shared Set was changed in
// other ways than its wrapped methods.
var setTouchedScript = jsvalue.NewScript(`(function () {
		const P = Set.prototype, isExtensible = Object.isExtensible, getPrototypeOf = Object.getPrototypeOf, ownKeys = Reflect.ownKeys;
		return (s) => !isExtensible(s) || getPrototypeOf(s) !== P || ownKeys(s).length !== 0;
	})()`)
