package jsvalue

import (
	"sync"

	"github.com/dop251/goja"
)

// Script is a script of riot's own (named InternalFile in stacks) that
// every runtime of a kind runs once, as it is made: compiled once per
// process, on its first run, and run in each runtime from the same
// goja.Program, which is safe to share. Compiling it anew per runtime was
// most of the cost of a fresh runtime.
type Script struct {
	src  string
	once sync.Once
	prg  *goja.Program
	err  error
}

// NewScript returns the script of source src.
func NewScript(src string) *Script { return &Script{src: src} }

// Run runs the script in rt and returns its completion value.
func (s *Script) Run(rt *goja.Runtime) (goja.Value, error) {
	s.once.Do(func() { s.prg, s.err = goja.Compile(InternalFile, s.src, false) })
	if s.err != nil {
		return nil, s.err
	}
	return rt.RunProgram(s.prg)
}
