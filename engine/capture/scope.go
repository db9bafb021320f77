package capture

import (
	"fmt"
	"strings"
)

// bindKind tells an ordinary binding from the implicit `arguments` object.
type bindKind uint8

const (
	bindPlain bindKind = iota + 1
	bindArguments
)

// prov is the set of lexical things a scope provides to code (and arrows)
// inside it.
type prov uint8

const (
	provThis prov = 1 << iota
	provNewTarget
	provSuper
)

// scope is one lexical environment. Scopes are created in a single walk: a
// scope's declarations are all made when it is entered (the declare pass),
// before any code inside it is resolved (the resolve pass), so a lookup from
// any point sees every binding that is in scope there.
type scope struct {
	parent *scope
	// owner is the innermost function or class whose text contains the
	// scope; nil for the script's top level.
	owner *funcInfo
	names map[string]bindKind
	// prov says what `this`, `new.target` and `super` bind to here;
	// provWhat names the provider in reasons.
	prov     prov
	provWhat string
	// superMethod marks the parameter scope of a method function: shipping
	// that method on its own loses its home object.
	superMethod bool
	// private holds the private names a class scope declares.
	private map[string]bool
}

// regKind says how the rewrite registers a function with the hook.
type regKind uint8

const (
	regNone   regKind = iota
	regWrap           // hook(id, getter, E) in place of the expression E
	regHoist          // hook(id, getter, name); at the start of the declaring scope
	regClass          // hook(id, getter, this) in a static block
	regMember         // hook(id, getter, holder, ...path) for methods
	regIfBody         // sloppy `if (x) function f(){}`: not registered
	regShadow         // a later declaration of the same name replaces it
)

// funcInfo is a Func under construction.
type funcInfo struct {
	id     int
	parent *funcInfo
	kind   Kind
	name   string
	// start and end delimit the original text; for methods start is the
	// start of the key and paramStart the '(' of the parameter list.
	start, end, paramStart int
	async, generator       bool
	strict                 bool // it is in strict code

	free      []string
	freeSet   map[string]struct{}
	globals   []string
	globalSet map[string]struct{}
	reasons   []string // why not shippable
	noReg     string   // why not registered, decided during the walk

	reg        regKind
	declName   string // regHoist: the declared name
	trickKey   string // regWrap: keeps NamedEvaluation via {key: E}access
	trickAcc   string
	parens     bool     // regWrap: the wrapped call must be parenthesised
	path       []string // regMember: JS expressions of the property keys
	registered bool     // final decision, set by finalize
}

func (f *funcInfo) addFree(name string) bool {
	if _, ok := f.freeSet[name]; ok {
		return false
	}
	if f.freeSet == nil {
		f.freeSet = map[string]struct{}{}
	}
	f.freeSet[name] = struct{}{}
	f.free = append(f.free, name)
	return true
}

func (f *funcInfo) addGlobal(name string) bool {
	if _, ok := f.globalSet[name]; ok {
		return false
	}
	if f.globalSet == nil {
		f.globalSet = map[string]struct{}{}
	}
	f.globalSet[name] = struct{}{}
	f.globals = append(f.globals, name)
	return true
}

func (f *funcInfo) unship(reason string) {
	for _, r := range f.reasons {
		if r == reason {
			return
		}
	}
	f.reasons = append(f.reasons, reason)
}

// push opens a scope inside the current one.
func (w *walker) push(owner *funcInfo) *scope {
	s := &scope{parent: w.cur, owner: owner}
	w.cur = s
	return s
}

// declare binds name in s.
func (w *walker) declare(s *scope, name string, k bindKind) {
	if name == w.hook {
		w.fail(fmt.Errorf("%w: %q is declared", ErrReservedName, name))
	}
	if s.names == nil {
		s.names = map[string]bindKind{}
	}
	if old, ok := s.names[name]; ok && (old == bindPlain || k == bindArguments) {
		return
	}
	s.names[name] = k
}

func (w *walker) lookup(name string) (*scope, bindKind) {
	for s := w.cur; s != nil; s = s.parent {
		if k, ok := s.names[name]; ok {
			return s, k
		}
	}
	return nil, 0
}

// use resolves a reference to name from the current scope and records it as
// free in every function between the reference and the binding, or as a
// global in every enclosing function when nothing in the script binds it.
func (w *walker) use(name string) {
	if name == w.hook {
		w.fail(fmt.Errorf("%w: %q is used", ErrReservedName, name))
	}
	s, k := w.lookup(name)
	switch {
	case s == nil:
		for f := w.cur.owner; f != nil; f = f.parent {
			if !f.addGlobal(name) {
				break // its enclosing functions have it too
			}
		}
	case k == bindArguments:
		w.markUpTo(s.owner, false, "uses `arguments` of an enclosing function")
	default:
		for f := w.cur.owner; f != nil && f != s.owner; f = f.parent {
			if !f.addFree(name) {
				break // every reference inside f to name resolves to the same outer binding
			}
		}
	}
}

// markUpTo marks every function from the current one out to (but not
// including, unless inclusive) stop as not shippable; stop nil means all.
func (w *walker) markUpTo(stop *funcInfo, inclusive bool, reason string) {
	for f := w.cur.owner; f != nil && f != stop; f = f.parent {
		f.unship(reason)
	}
	if inclusive && stop != nil {
		stop.unship(reason)
	}
}

func (w *walker) provider(p prov) *scope {
	for s := w.cur; s != nil; s = s.parent {
		if s.prov&p != 0 {
			return s
		}
	}
	return nil
}

func (w *walker) useThis() {
	if s := w.provider(provThis); s != nil {
		w.markUpTo(s.owner, false, "uses `this` of "+s.provWhat)
	}
}

func (w *walker) useNewTarget() {
	if s := w.provider(provNewTarget); s != nil {
		w.markUpTo(s.owner, false, "uses `new.target` of "+s.provWhat)
	}
}

func (w *walker) useSuper() {
	s := w.provider(provSuper)
	if s == nil {
		return
	}
	if s.superMethod {
		for f := w.cur.owner; f != nil && f != s.owner; f = f.parent {
			f.unship("uses `super` of an enclosing method")
		}
		s.owner.unship("uses `super`, which needs the object or class the method belongs to")
		return
	}
	what := s.provWhat
	if what == "an enclosing function" {
		what = "an enclosing constructor"
	}
	w.markUpTo(s.owner, false, "uses `super` of "+what)
}

func (w *walker) usePrivate(name string) {
	for s := w.cur; s != nil; s = s.parent {
		if s.private[name] {
			w.markUpTo(s.owner, false, "uses private name #"+name+" of an enclosing class")
			return
		}
	}
}

// forbiddenFree returns a captured name that a getter cannot read in every
// context the rewrite puts it in (generators, async functions, class static
// blocks), or "".
func (f *funcInfo) forbiddenFree() string {
	for _, n := range []string{"arguments", "await", "yield"} {
		if _, ok := f.freeSet[n]; ok {
			return n
		}
	}
	return ""
}

func (f *funcInfo) reason() string {
	rs := f.reasons
	if !f.registered && f.noReg != "" {
		rs = append(rs[:len(rs):len(rs)], f.noReg)
	}
	return strings.Join(rs, "; ")
}
