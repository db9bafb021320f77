package engine

import (
	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/opguard"
)

// bindOpGuard installs the guard of the BigInt operators (package
// engine/internal/opguard) that the engine's compiled code calls, and, in
// a workunit's sandbox, the eval and function constructors that compile
// through it. It comes first, before anything a script could reach.
func bindOpGuard(rl *realm) error {
	return opguard.Install(rl.rt, rl.throw, true)
}

// bindOpGuardStandalone is bindOpGuard for a standalone sandbox (a job
// script's): the guard for code the engine compiles, but the built-in eval
// and constructors, since the script is its owner's own.
func bindOpGuardStandalone(rl *realm) error {
	return opguard.Install(rl.rt, rl.throw, false)
}

// compileGuarded is how the engine compiles every source it runs.
func compileGuarded(name, src string) (*goja.Program, error) {
	return opguard.Compile(name, src)
}
