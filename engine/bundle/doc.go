// Package bundle turns a job script that is an ES module or TypeScript
// (.mjs, .ts, .mts, .cts, or a .js script with import, export or a
// top-level await) into the plain JavaScript that the master's goja
// runtime runs, with esbuild's Go API: the script and the job's own
// modules it imports, and packages from a node_modules folder beside it or
// above it, become one script (so the functions of every module are
// instrumented and shipped by content like the script's own), and a
// source map leads back to the original files.
//
// Workers never see TypeScript or modules: the functions a job sends are
// taken from the bundled JavaScript.
//
// # Usage
//
//	b, err := bundle.Build("job.ts", src) // an *Error says file:line:column and what
//	script, err := capture.Instrument("job.ts.bundle.js", b.Source, capture.Options{})
//	m := b.Map.Inserted(b.Source, spans) // spans: script.Insertions
//	src := script.Source + m.Comment("job.ts.bundle.js")
//
// Module does the same for a module that riot.doWorkCall ships: one
// CommonJS module with the files it imports and an inline source map, which
// goja reads when a worker compiles it, so that the worker's own stacks name
// the original lines:
//
//	src, inputs, err := bundle.Module("lib/calc.ts") // inputs: for a cache to tell changes
//
// Result.Source is an async arrow function:
//
//	(async () => {"use strict";const __riot_import_meta = Object.freeze({...});
//	...the bundled modules...
//	})
//
// so that the module's top-level await works: the script's value is the
// module's body, which the caller calls (from Go, so that no frame of the
// call shows in stacks), and the promise it returns is the module's
// evaluation, which the caller awaits with its event loop (its rejection
// is the module's uncaught exception). The first
// line is the wrapper's own; the "use strict" is there for an ES module
// (Result.Module), not for a TypeScript file without import or export,
// which is a sloppy-mode script as in TypeScript. import.meta, which a
// script cannot hold, becomes that constant: the job script's url,
// filename and dirname, in every module.
//
// # Positions
//
// Map maps a 1-based line and column of Result.Source (generated columns
// in bytes, as goja counts them) to the original file, line and column:
//
//   - Map.Inserted carries it over to a text made by inserting spans (the
//     capture pass's rewrite), and Map.Comment attaches that as an inline
//     source map, which goja reads: the master's own stack traces and
//     error.stack name the original files.
//   - Map.Lookup and Map.RemapStack map positions of Result.Source itself:
//     a shipped function says where it is in the bundled JavaScript, so a
//     worker's stack names the bundled file; the master maps it back when
//     the error arrives.
//
// # Imports
//
// Relative imports are files of the job (TypeScript ones with or without
// their extension). A bare name (import x from 'lodash') is a package of a
// node_modules folder beside the script or above it, resolved as Node
// resolves it ("module" then "main" of its package.json); elsewhere it is
// an *Error that names the import, the file and the line, and says what to
// do. Node's built-in modules (fs, node:path) are an *Error too.
//
// Build is safe for concurrent use.
package bundle
