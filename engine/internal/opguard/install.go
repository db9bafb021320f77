package opguard

import (
	"math"
	"math/big"
	"reflect"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// Thrower throws a JavaScript error of the built-in class name (such as
// "RangeError") with a formatted message into the running script; it does
// not return.
type Thrower func(name, format string, args ...any)

var bigIntType = reflect.TypeOf((*big.Int)(nil))

// FramePrefix begins the name of the guard's frame in a stack trace (goja
// names a Go function by its Go name): a stack shown to a user leaves
// such frames out, so that it begins at the operator, as V8's does.
var FramePrefix = reflect.TypeOf(guard{}).PkgPath() + "."

// raw is the operators themselves, compiled without the guard: what the
// guard leaves to them runs here. It is one of riot's internal scripts,
// whose frames a stack shown to a user leaves out: an error it throws
// begins at the operator.
// It also gets and sets a property as the operators' assignments do, in
// strict code (setSloppy is the setter of sloppy code).
var raw = goja.MustCompile(jsvalue.InternalFile,
	"[(a, b) => a ** b, (a, b) => a << b, (a, b) => a >> b, (o, k) => o[k], (o, k, v) => { o[k] = v }]", true)

var setSloppy = goja.MustCompile(jsvalue.InternalFile, "(function (o, k, v) { o[k] = v })", false)

// probeFunctions makes a function of each kind whose constructor Install
// replaces.
var probeFunctions = goja.MustCompile("opguard", "[function(){}, async function(){}, function*(){}]", false)

// guard is one runtime's guard.
type guard struct {
	rt    *goja.Runtime
	throw Thrower
	ops   [3]goja.Callable // pow, shl, shr
	// getProp and setProp are o[k] and o[k] = v; setSloppy is the latter
	// in sloppy code.
	getProp, setProp, setSloppy goja.Callable
}

const (
	opPow = iota
	opShl
	opShr
)

// Install puts the guard into rt: the global Name (not enumerable, not
// writable), and, when dynamic is set, eval and the Function constructors
// that compile their source through Compile. It must run before any user
// code, so that none keeps the original eval or constructors.
func Install(rt *goja.Runtime, throw Thrower, dynamic bool) error {
	g := &guard{rt: rt, throw: throw}
	v, err := rt.RunProgram(raw)
	if err != nil {
		return err
	}
	arr := v.(*goja.Object)
	for i := range g.ops {
		fn, ok := goja.AssertFunction(arr.Get(string(rune('0' + i))))
		if !ok {
			return errNotFunction
		}
		g.ops[i] = fn
	}
	var okGet, okSet, okSloppy bool
	g.getProp, okGet = goja.AssertFunction(arr.Get("3"))
	g.setProp, okSet = goja.AssertFunction(arr.Get("4"))
	sv, err := rt.RunProgram(setSloppy)
	if err != nil {
		return err
	}
	g.setSloppy, okSloppy = goja.AssertFunction(sv)
	if !okGet || !okSet || !okSloppy {
		return errNotFunction
	}
	obj := rt.NewObject()
	fns := []struct {
		name string
		fn   func(goja.FunctionCall) goja.Value
	}{
		{"pow", g.binary(opPow)},
		{"shl", g.binary(opShl)},
		{"shr", g.binary(opShr)},
		{"powSet", g.set(opPow)},
		{"shlSet", g.set(opShl)},
		{"shrSet", g.set(opShr)},
		{"powPrivate", g.private(opPow)},
		{"shlPrivate", g.private(opShl)},
		{"shrPrivate", g.private(opShr)},
	}
	for _, f := range fns {
		if err := obj.DefineDataProperty(f.name, rt.ToValue(f.fn), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
			return err
		}
	}
	if err := rt.GlobalObject().DefineDataProperty(Name, obj, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
		return err
	}
	if !dynamic {
		return nil
	}
	if err := g.installEval(); err != nil {
		return err
	}
	return g.installConstructors()
}

type installError string

func (e installError) Error() string { return string(e) }

const errNotFunction = installError("opguard: an operator of the guard did not compile to a function")

// binary is the guard of a binary operator: guard.pow(a, b) is a ** b.
func (g *guard) binary(op int) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		return g.apply(op, c.Argument(0), c.Argument(1))
	}
}

// set is the guard of a compound assignment to a member:
// guard.powSet(o, k, b, strict) is o[k] **= b, with b evaluated before o[k]
// is read; strict tells whether the assignment is strict mode code (where
// a property that cannot be set throws).
func (g *guard) set(op int) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		o := c.Argument(0)
		key := c.Argument(1)
		if _, isSym := key.(*goja.Symbol); !isSym {
			key = g.rt.ToValue(key.String()) // the key, converted once
		}
		cur, err := g.getProp(goja.Undefined(), o, key)
		if err != nil {
			panic(err)
		}
		res := g.apply(op, cur, c.Argument(2))
		set := g.setSloppy
		if c.Argument(3).ToBoolean() {
			set = g.setProp
		}
		if _, err := set(goja.Undefined(), o, key, res); err != nil {
			panic(err)
		}
		return res
	}
}

// private is the guard of a compound assignment to a private field of an
// expression's value: guard.powPrivate(o, get, set, b) is o.#x **= b, where
// get and set read and write o.#x (see privateAccess), with b evaluated
// before o.#x is read, as in set.
func (g *guard) private(op int) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		o := c.Argument(0)
		get, okGet := goja.AssertFunction(c.Argument(1))
		set, okSet := goja.AssertFunction(c.Argument(2))
		if !okGet || !okSet {
			g.throw("TypeError", "%s: the field's accessors are not functions", Name)
		}
		cur, err := get(goja.Undefined(), o)
		if err != nil {
			panic(err)
		}
		res := g.apply(op, cur, c.Argument(3))
		if _, err := set(goja.Undefined(), o, res); err != nil {
			panic(err)
		}
		return res
	}
}

// apply computes a op b: itself when both are BigInts or a shift of
// numbers, else through the operator.
func (g *guard) apply(op int, a, b goja.Value) goja.Value {
	if op != opPow {
		// Numeric code shifts numbers: done here, without the call into
		// the runtime that the operator costs.
		if x, ok := toInt32(a); ok {
			if y, ok := toInt32(b); ok {
				if op == opShl {
					return g.rt.ToValue(int64(x << (uint32(y) & 31)))
				}
				return g.rt.ToValue(int64(x >> (uint32(y) & 31)))
			}
		}
	}
	a = g.primitive(a)
	if _, ok := a.(*goja.Symbol); ok {
		// ToNumeric of the left operand throws before the right one is
		// converted: the operator does both.
		return g.operator(op, a, b)
	}
	b = g.primitive(b)
	x, okA := g.bigInt(a)
	y, okB := g.bigInt(b)
	if !okA || !okB {
		return g.operator(op, a, b)
	}
	switch op {
	case opPow:
		return g.pow(x, y)
	case opShl:
		return g.shift(x, y, false)
	default:
		return g.shift(x, y, true)
	}
}

// operator is a op b by the operator itself.
func (g *guard) operator(op int, a, b goja.Value) goja.Value {
	v, err := g.ops[op](goja.Undefined(), a, b)
	if err != nil {
		panic(err)
	}
	return v
}

func (g *guard) pow(x, y *big.Int) goja.Value {
	if y.Sign() < 0 {
		g.throw("RangeError", "Exponent must be non-negative")
	}
	if x.CmpAbs(big.NewInt(1)) <= 0 {
		// 0, 1 and -1 stay small whatever the exponent.
		if x.Sign() == 0 {
			if y.Sign() == 0 {
				return g.rt.ToValue(big.NewInt(1))
			}
			return g.rt.ToValue(new(big.Int))
		}
		if x.Sign() < 0 && y.Bit(0) == 1 {
			return g.rt.ToValue(big.NewInt(-1))
		}
		return g.rt.ToValue(big.NewInt(1))
	}
	// |x|^y has floor(y·log2|x|)+1 bits.
	if !y.IsInt64() || y.Int64() > MaxBigIntBits || float64(y.Int64())*log2(x) >= MaxBigIntBits {
		g.tooLarge()
	}
	return g.rt.ToValue(new(big.Int).Exp(x, y, nil))
}

// log2 returns log2|x| for |x| >= 2, to float64's precision.
func log2(x *big.Int) float64 {
	n := x.BitLen()
	if n <= 64 {
		return math.Log2(float64(new(big.Int).Abs(x).Uint64()))
	}
	top := new(big.Int).Rsh(new(big.Int).Abs(x), uint(n-64)).Uint64()
	return float64(n-64) + math.Log2(float64(top))
}

// shift computes x << y (x >> y when right), as the specification defines
// them: a shift right by a negative amount is a shift left.
func (g *guard) shift(x, y *big.Int, right bool) goja.Value {
	left := y.Sign() >= 0
	if right {
		left = !left
	}
	n := new(big.Int).Abs(y)
	if left {
		if x.Sign() == 0 {
			return g.rt.ToValue(new(big.Int))
		}
		if !n.IsInt64() || int64(x.BitLen())+n.Int64() > MaxBigIntBits {
			g.tooLarge()
		}
		return g.rt.ToValue(new(big.Int).Lsh(x, uint(n.Int64())))
	}
	if !n.IsInt64() || n.Int64() > int64(x.BitLen()) {
		// Every bit is shifted out: 0, or -1 for a negative x (the shift
		// rounds toward minus infinity).
		if x.Sign() < 0 {
			return g.rt.ToValue(big.NewInt(-1))
		}
		return g.rt.ToValue(new(big.Int))
	}
	return g.rt.ToValue(new(big.Int).Rsh(x, uint(n.Int64())))
}

func (g *guard) tooLarge() {
	g.throw("RangeError", "Maximum BigInt size exceeded (** and shifts in a workunit make BigInts of at most 2^26 bits)")
}

var (
	int64Type   = reflect.TypeOf(int64(0))
	float64Type = reflect.TypeOf(float64(0))
)

// toInt32 is ToInt32(v) for a number v (the conversion of a shift's
// operands); it reports false for any other value.
func toInt32(v goja.Value) (int32, bool) {
	if v == nil {
		return 0, false
	}
	switch v.ExportType() {
	case int64Type:
		return int32(v.ToInteger()), true // the low 32 bits: ToInt32's modulo
	case float64Type:
		f := v.ToFloat()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, true
		}
		return int32(uint32(int64(math.Mod(math.Trunc(f), 1<<32)))), true
	}
	return 0, false
}

// bigInt returns v's value when it is a BigInt.
func (g *guard) bigInt(v goja.Value) (*big.Int, bool) {
	if v == nil || v.ExportType() != bigIntType {
		return nil, false
	}
	b, ok := v.Export().(*big.Int)
	return b, ok
}

// primitive is ToPrimitive(v, number), as the operators convert their
// operands: @@toPrimitive, else valueOf, else toString.
func (g *guard) primitive(v goja.Value) goja.Value {
	o, ok := v.(*goja.Object)
	if !ok {
		return v
	}
	if f := o.GetSymbol(goja.SymToPrimitive); f != nil && !goja.IsUndefined(f) && !goja.IsNull(f) {
		fn, ok := goja.AssertFunction(f)
		if !ok {
			g.throw("TypeError", "Symbol.toPrimitive is not a function")
		}
		r, err := fn(o, g.rt.ToValue("number"))
		if err != nil {
			panic(err)
		}
		if _, isObj := r.(*goja.Object); isObj {
			g.throw("TypeError", "Cannot convert object to primitive value")
		}
		return r
	}
	for _, m := range [...]string{"valueOf", "toString"} {
		if fn, ok := goja.AssertFunction(o.Get(m)); ok {
			r, err := fn(o)
			if err != nil {
				panic(err)
			}
			if _, isObj := r.(*goja.Object); !isObj {
				return r
			}
		}
	}
	g.throw("TypeError", "Cannot convert object to primitive value")
	return nil
}

// installEval replaces the global eval with one that compiles through the
// guard and runs in the global scope.
func (g *guard) installEval() error {
	eval := func(c goja.FunctionCall) goja.Value {
		src, ok := c.Argument(0).(goja.String)
		if !ok {
			return c.Argument(0)
		}
		return g.run("<eval>", src.String())
	}
	fn := g.rt.ToValue(eval).(*goja.Object)
	for _, p := range []struct {
		name string
		v    goja.Value
	}{{"name", g.rt.ToValue("eval")}, {"length", g.rt.ToValue(1)}} {
		if err := fn.DefineDataProperty(p.name, p.v, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return err
		}
	}
	return g.rt.GlobalObject().DefineDataProperty("eval", fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

func (g *guard) run(name, src string) goja.Value {
	prg, err := Compile(name, src)
	if err != nil {
		g.throw("SyntaxError", "%s", strings.TrimPrefix(err.Error(), "SyntaxError: "))
	}
	v, err := g.rt.RunProgram(prg)
	if err != nil {
		panic(err)
	}
	return v
}

// installConstructors replaces the three function constructors (Function,
// and those reached from the prototypes of async and generator functions;
// goja has no async generators) with ones that compile through the guard.
func (g *guard) installConstructors() error {
	probe, err := g.rt.RunProgram(probeFunctions)
	if err != nil {
		return err
	}
	heads := [...]string{"(function anonymous(", "(async function anonymous(", "(function* anonymous("}
	names := [...]string{"Function", "AsyncFunction", "GeneratorFunction"}
	arr := probe.(*goja.Object)
	for i, head := range heads {
		proto := arr.Get(string(rune('0' + i))).(*goja.Object).Prototype()
		ctor := g.constructor(head, proto)
		obj := g.rt.ToValue(ctor).(*goja.Object)
		for _, p := range []struct {
			name string
			v    goja.Value
		}{{"name", g.rt.ToValue(names[i])}, {"length", g.rt.ToValue(1)}} {
			if err := obj.DefineDataProperty(p.name, p.v, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				return err
			}
		}
		if err := obj.DefineDataProperty("prototype", proto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
			return err
		}
		writable := goja.FLAG_FALSE
		if i == 0 {
			writable = goja.FLAG_TRUE
		}
		if err := proto.DefineDataProperty("constructor", obj, writable, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return err
		}
		if i == 0 {
			if err := g.rt.GlobalObject().DefineDataProperty("Function", obj, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				return err
			}
		}
	}
	return nil
}

// constructor returns a function constructor that builds its source as the
// built-in one does and compiles it through the guard. Called with new by
// a subclass, the function gets the subclass's prototype.
func (g *guard) constructor(head string, proto *goja.Object) func(goja.ConstructorCall) *goja.Object {
	return func(c goja.ConstructorCall) *goja.Object {
		var sb strings.Builder
		sb.WriteString(head)
		if n := len(c.Arguments); n > 1 {
			for i, a := range c.Arguments[:n-1] {
				if i > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(a.String())
			}
		}
		sb.WriteString("\n) {\n")
		if n := len(c.Arguments); n > 0 {
			sb.WriteString(c.Arguments[n-1].String())
		}
		sb.WriteString("\n})")
		fn := g.run("<eval>", sb.String()).ToObject(g.rt)
		if c.NewTarget != nil {
			if p, ok := c.NewTarget.Get("prototype").(*goja.Object); ok && p != proto {
				if err := fn.SetPrototype(p); err != nil {
					panic(err)
				}
			}
		}
		return fn
	}
}
