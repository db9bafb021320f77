// Package capture finds the free variables of every function in a job script
// and rewrites the script so that each function, as it is created, hands the
// runtime a way to read those variables later.
//
// riot.doWork(fn, ...args) and riot.forWork(iterable, fn) send fn to a worker
// as its source text plus the current values of its free variables, the way
// cloudpickle ships closures for Ray and Dask. goja cannot read a closure's
// variables from outside, so the master runs an instrumented copy of the
// script instead of the script itself. This package does the static half:
// scope analysis and the rewrite. The runtime half (the hook, the value
// encoding, rebuilding functions on workers) belongs to the engine.
//
// # Usage
//
//	s, err := capture.Instrument("job.js", src, capture.Options{})
//	if err != nil { ... }          // *SyntaxError carries file:line:column
//	rt.Set(capture.DefaultHook, hook) // see "The hook contract"
//	_, err = rt.RunScript("job.js", s.Source)
//
// For every function the script can create, s.Funcs[id] holds the text to
// ship (Source), the captured variables in order (Free), the names left to the
// worker's global scope (Globals) and whether it can be shipped at all
// (Shippable, Reason).
//
// # The rewrite
//
// The rewrite only inserts text, never within a token and never a line
// break, so every original token keeps its line: stack traces on the master
// point at the user's lines (columns shift only after an insertion on the
// same line). Script.Insertions lists what was inserted where, so that a
// source map of the original (a bundled TypeScript job's) carries over to
// the rewritten text. H stands for the hook's name, id for the function's index in
// Script.Funcs, and G for its getter (see below).
//
//   - Function expressions and arrow functions: E becomes H(id,G,E). Where E
//     would take its name from the syntax around it (const f = () => 1, an
//     assignment, a destructuring default, a property or field), E becomes
//     H(id,G,{f:E}.f), which names it exactly as before, both for .name and
//     for goja's stack traces. As the leftmost part of a `new` callee the call
//     is parenthesised.
//   - Function declarations are hoisted, so they are registered by a
//     statement void H(id,G,f); at the start of the scope that declares them
//     (after any directive prologue; at the top of the script, after a
//     hashbang line), before any code of that scope runs. Declarations in a
//     switch are registered at the start of every clause, since control may
//     enter at any of them.
//   - Classes, declared or not, are registered from a static block inserted
//     first in the class body: static{H(id,G,this);...}. It runs when the
//     class is created, before any static field, and sees the class's own
//     name. The same block registers the class's methods:
//     H(id,G,this,"prototype","m") for a prototype method, H(id,G,this,"m")
//     for a static one.
//   - Object literals with methods are wrapped: {m(){}} becomes
//     H(id,G,{m(){}},"m"), nested once per method.
//
// Not registered (Registered false; Reason says why): getters and setters
// (not shippable), private methods, methods with computed keys or replaced
// by a later property of the same key, anonymous functions that are the value
// of a computed key (wrapping would lose the name the key gives them at run
// time), function declarations that are the body of a sloppy-mode if
// statement, function declarations replaced by a later one of the same name,
// and functions that capture a variable named arguments, await or yield
// (a getter could not read it in every context).
//
// # The hook contract
//
// The hook is a global function (Options.Hook, default "__riot_capture"),
// called as
//
//	H(id, getter, value, ...path) // returns value
//
// with these arguments and duties:
//
//   - id is the function's index in Script.Funcs.
//   - getter is null when Funcs[id].Free is empty; otherwise a function of no
//     arguments that returns a fresh array holding the current values of
//     Funcs[id].Free, in order. It reads the bindings when it is called, so
//     call it when the function is shipped (at doWork), not at registration.
//     A binding still in its temporal dead zone makes it throw a
//     ReferenceError.
//   - value is the function or class being registered when path is empty.
//     Otherwise it is the object literal or class that holds it, and the
//     function is value[path[0]][path[1]]... (one or two keys, strings or
//     numbers), an own data property: read it without invoking accessors.
//   - The hook must return value unchanged: for wrapped expressions the
//     script uses the result in place of the original expression.
//   - It may be called more than once for the same function with the same
//     id (switch clauses); it must accept that.
//   - It runs on the script's goroutine, once per function created: loops
//     that create closures call it once per closure, so keep it cheap and do
//     not keep functions alive through it (for example, attach the id and
//     getter to the function under a private symbol instead of filling a
//     map).
//   - An exception thrown by the hook propagates into the script where the
//     function is created.
//
// # Semantics of captures
//
//   - Captured by value at doWork time: the worker gets a copy of each free
//     variable's value as it was when the workunit was made. A workunit that
//     assigns to a captured variable changes only its own copy; the master's
//     variable and other workunits are not affected.
//   - Free lists the variables bound anywhere in the script: in enclosing
//     functions, blocks, loop heads, catch clauses, classes or the script's
//     top level. A free variable bound inside an enclosing function that is
//     itself being shipped is not free of that function: when f contains g,
//     g's free variables bound in f are local to f, and only those bound
//     further out are free in f.
//   - Globals are names bound nowhere in the script (Math, console, riot,
//     undefined, NaN, Infinity unless shadowed, and implicit globals created
//     by assigning to an undeclared name): they resolve in the worker's own
//     global scope.
//   - this, arguments, super and new.target are never captured. A function
//     that uses them lexically from an enclosing function, class or the
//     script (an arrow using the outer this, for instance) is not shippable;
//     so is a method that uses super (it would lose its home object), and any
//     function that uses a private name of an enclosing class.
//   - A function that contains a with statement or a direct call of eval, or
//     is defined inside a with statement, is not shippable: its variables
//     cannot be known statically. So is every function enclosing it.
//   - Scopes follow strict-mode rules everywhere: var is function-scoped;
//     let, const and class are block-scoped (for-loop heads get a binding
//     per iteration, which each closure captures); function declarations in
//     blocks are block-scoped too, as goja binds them. Sloppy-mode Annex B
//     (a block's function also assigned to a var of the enclosing function)
//     is not modelled: a use of such a name outside its block counts as a
//     global. Labels and property names are not variables.
//
// # Shipping a function
//
// Source is an expression: evaluate "(" + Source + ")" in a scope where each
// name of Free is bound to its value, and position it with Line and Column
// (of Source[HeaderLen:]) so that stack traces on workers point at the
// user's lines. Functions among the values ship the same way, recursively;
// recursive and mutually recursive functions capture each other, so create
// all bindings first and fill them after. A function declaration's Free
// lists its own name when it calls itself; read as an expression, its Source
// binds that name to the function itself, which is the captured value unless
// the script reassigned it. An anonymous function keeps its inferred Name
// only if the receiving side names it (for example with {[Name]: fn}[Name]).
// A method's Source starts with a synthesized "function" header (HeaderLen
// bytes) and has no name when the body uses an outer variable of the same
// name.
//
// # The caller's duties
//
//  1. Install the hook as a global of the runtime before running
//     Script.Source, and run Script.Source, not the original.
//  2. Keep the Script with the runtime: ids mean nothing without Funcs.
//  3. At doWork, find fn's registration; refuse a function that is not
//     registered (it was not created by the instrumented script, or Reason
//     says why it was not registered) or not Shippable (report Reason).
//  4. Call the getter then, catch its ReferenceError for variables in their
//     temporal dead zone, and encode the values (functions recursively,
//     through their own registrations).
//  5. Expect Function.prototype.toString on the master to show the inserted
//     text inside functions that contain others; Source is always the
//     original text.
//
// Instrument is a pure function of its arguments and safe for concurrent
// use.
package capture
