// Package jsvalue is the JavaScript side of riot's value documents
// (docs/values.md): it encodes goja values into documents and decodes
// documents straight into goja values of one runtime, and it tells what
// kind of value an object is the way structured clone does.
//
// Everything here works on one goja runtime at a time, on the goroutine
// that runs it, and relies on that runtime's Intrinsics: its built-in
// functions and prototypes, read once before any script of a user runs
// (LoadIntrinsics), so that a script that rewrites Map.prototype.forEach
// or Object.freeze changes nothing here.
//
// The package is shared by the three users of JavaScript in riot: the
// engine's sandboxes (results, arguments, captured values), the master
// (workunit payloads, with captured functions and blobs), and the GPU
// bindings (typed arrays).
//
// # Usage
//
//	in, err := jsvalue.LoadIntrinsics(rt)
//	enc := jsvalue.NewEncoder(rt, in, jsvalue.EncodeOptions{Root: "result", Dest: "back to the master"})
//	var data []byte
//	ex := rt.Try(func() { data, err = enc.EncodeValue(v) }) // getters may throw
//	fns := jsvalue.NewFunctions(rt, compile)
//	dec := jsvalue.NewDecoder(rt, in, fns, blobs)
//	v, err := dec.DecodeValue(data)
//
// The caller's duties:
//
//  1. Load the intrinsics before any user script runs in the runtime, and
//     use a runtime's encoders, decoders and functions on its goroutine
//     only.
//  2. Run encoding inside goja's Runtime.Try: it reads properties, and a
//     getter may throw.
//  3. Copy what EncodeValue, Bytes and Blobs return before using the
//     encoder again.
package jsvalue
