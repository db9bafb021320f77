// Package types holds riot.d.ts, the TypeScript declarations of the globals
// that riot job scripts and workunits see (the riot object, console, the
// timers, the web globals, the GPU functions), for editors and tsc.
// riot-worker types prints it; scripts/tsconfig.json checks the scripts of
// scripts/ against it (docs/getting-started.md).
//
// The file in this directory is the only copy: it is embedded, so what
// riot-worker types prints is always what the repository holds.
package types

import _ "embed"

//go:embed riot.d.ts
var riotDTS string

// RiotDTS returns the text of riot.d.ts.
func RiotDTS() string { return riotDTS }
