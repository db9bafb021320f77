package jswasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// What this file reads of a module's bytes (the imports and exports, in
// order, with their types: wazero lists its imported and exported functions
// and memories, but neither its globals nor its tables, nor the order of
// its exports) and the small modules it writes: holders of one memory or
// one global, and the shims that give a module its imports under the names
// it asks for.

// Kinds of import and export, as the binary format numbers them.
const (
	kindFunc   byte = 0
	kindTable  byte = 1
	kindMemory byte = 2
	kindGlobal byte = 3
	kindTag    byte = 4
)

// kindName is the name of a kind, as WebAssembly.Module.imports lists it.
func kindName(k byte) string {
	switch k {
	case kindFunc:
		return "function"
	case kindTable:
		return "table"
	case kindMemory:
		return "memory"
	case kindGlobal:
		return "global"
	case kindTag:
		return "tag"
	}
	return fmt.Sprintf("kind %d", k)
}

// Value types.
const (
	typeI32       byte = 0x7f
	typeI64       byte = 0x7e
	typeF32       byte = 0x7d
	typeF64       byte = 0x7c
	typeV128      byte = 0x7b
	typeFuncref   byte = 0x70
	typeExternref byte = 0x6f
)

// funcType is a function's signature.
type funcType struct {
	params, results []byte
}

// limits are a memory's or a table's sizes; hasMax says whether max is set.
type limits struct {
	min, max uint32
	hasMax   bool
}

// globalType is a global's value type and mutability.
type globalType struct {
	val     byte
	mutable bool
}

// importDesc is one import of a module.
type importDesc struct {
	module, name string
	kind         byte
	fn           funcType   // kindFunc
	mem          limits     // kindMemory
	global       globalType // kindGlobal
}

// exportDesc is one export of a module.
type exportDesc struct {
	name  string
	kind  byte
	index uint32
}

// moduleInfo is what riot reads of a module.
type moduleInfo struct {
	imports []importDesc
	exports []exportDesc
	// memories are the module's own memories (not imported).
	memories []limits
}

// errMalformed is a module whose sections riot cannot read (after wazero
// compiled it: a feature this reader does not know).
var errMalformed = errors.New("malformed module")

// reader reads the binary format.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errMalformed
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) u32() uint32 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxUint32 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return uint32(v)
}

func (r *reader) bytes(n uint32) []byte {
	if uint64(n) > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

func (r *reader) limits() limits {
	flag := r.byte()
	l := limits{min: r.u32()}
	if flag&1 != 0 {
		l.max, l.hasMax = r.u32(), true
	}
	if flag > 3 {
		r.fail()
	}
	return l
}

func (r *reader) valTypes() []byte {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	ts := make([]byte, n)
	for i := range ts {
		ts[i] = r.byte()
	}
	return ts
}

// parseModule reads the types, imports, memories and exports of a module
// that wazero compiled.
func parseModule(b []byte) (*moduleInfo, error) {
	if len(b) < 8 {
		return nil, errMalformed
	}
	r := &reader{b: b[8:]}
	info := &moduleInfo{}
	var types []funcType
	for len(r.b) > 0 && r.err == nil {
		id := r.byte()
		sec := &reader{b: r.bytes(r.u32())}
		switch id {
		case 1: // types
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				if sec.byte() != 0x60 {
					sec.fail()
					break
				}
				types = append(types, funcType{params: sec.valTypes(), results: sec.valTypes()})
			}
		case 2: // imports
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				im := importDesc{module: sec.name(), name: sec.name(), kind: sec.byte()}
				switch im.kind {
				case kindFunc:
					t := sec.u32()
					if int(t) >= len(types) {
						sec.fail()
						break
					}
					im.fn = types[t]
				case kindTable:
					sec.byte()
					sec.limits()
				case kindMemory:
					im.mem = sec.limits()
				case kindGlobal:
					im.global = globalType{val: sec.byte(), mutable: sec.byte() == 1}
				case kindTag:
					sec.byte()
					sec.u32()
				default:
					sec.fail()
				}
				info.imports = append(info.imports, im)
			}
		case 5: // memories
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				info.memories = append(info.memories, sec.limits())
			}
		case 7: // exports
			for n := sec.u32(); n > 0 && sec.err == nil; n-- {
				info.exports = append(info.exports, exportDesc{name: sec.name(), kind: sec.byte(), index: sec.u32()})
			}
		}
		if sec.err != nil {
			r.err = sec.err
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return info, nil
}

// writer writes the binary format.
type writer struct{ b []byte }

func (w *writer) u32(v uint32)   { w.b = binary.AppendUvarint(w.b, uint64(v)) }
func (w *writer) name(s string)  { w.u32(uint32(len(s))); w.b = append(w.b, s...) }
func (w *writer) byte(c byte)    { w.b = append(w.b, c) }
func (w *writer) bytes(b []byte) { w.b = append(w.b, b...) }

func (w *writer) limits(l limits) {
	if l.hasMax {
		w.byte(1)
		w.u32(l.min)
		w.u32(l.max)
		return
	}
	w.byte(0)
	w.u32(l.min)
}

// section appends section id with the contents body writes.
func (w *writer) section(id byte, body func(s *writer)) {
	s := &writer{}
	body(s)
	w.byte(id)
	w.u32(uint32(len(s.b)))
	w.bytes(s.b)
}

var wasmHeader = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}

// memoryModule is a module that exports one memory, "memory", of l.
func memoryModule(l limits) []byte {
	w := &writer{b: append([]byte(nil), wasmHeader...)}
	w.section(5, func(s *writer) { s.u32(1); s.limits(l) })
	w.section(7, func(s *writer) { s.u32(1); s.name("memory"); s.byte(kindMemory); s.u32(0) })
	return w.b
}

// globalModule is a module that exports one global, "global", of type t
// whose initial value is bits (the value's bits as wazero keeps them).
func globalModule(t globalType, bits uint64) []byte {
	w := &writer{b: append([]byte(nil), wasmHeader...)}
	w.section(6, func(s *writer) {
		s.u32(1)
		s.byte(t.val)
		if t.mutable {
			s.byte(1)
		} else {
			s.byte(0)
		}
		switch t.val {
		case typeI32:
			s.byte(0x41)
			s.b = appendSLEB(s.b, int64(int32(uint32(bits))))
		case typeI64:
			s.byte(0x42)
			s.b = appendSLEB(s.b, int64(bits))
		case typeF32:
			s.byte(0x43)
			s.b = binary.LittleEndian.AppendUint32(s.b, uint32(bits))
		case typeF64:
			s.byte(0x44)
			s.b = binary.LittleEndian.AppendUint64(s.b, bits)
		}
		s.byte(0x0b)
	})
	w.section(7, func(s *writer) { s.u32(1); s.name("global"); s.byte(kindGlobal); s.u32(0) })
	return w.b
}

// shimItem is one import of a shim: from module from, field field, given
// to the importing module as name.
type shimItem struct {
	imp         importDesc // the importing module's import (kind, type)
	from, field string
}

// shimModule is a module that imports each item from where it is and
// exports it under the name the importing module asks for: one import
// module of a module's imports.
func shimModule(items []shimItem) []byte {
	w := &writer{b: append([]byte(nil), wasmHeader...)}
	var funcs []funcType
	for _, it := range items {
		if it.imp.kind == kindFunc {
			funcs = append(funcs, it.imp.fn)
		}
	}
	if len(funcs) > 0 {
		w.section(1, func(s *writer) {
			s.u32(uint32(len(funcs)))
			for _, t := range funcs {
				s.byte(0x60)
				s.u32(uint32(len(t.params)))
				s.bytes(t.params)
				s.u32(uint32(len(t.results)))
				s.bytes(t.results)
			}
		})
	}
	var fi uint32
	w.section(2, func(s *writer) {
		s.u32(uint32(len(items)))
		for _, it := range items {
			s.name(it.from)
			s.name(it.field)
			s.byte(it.imp.kind)
			switch it.imp.kind {
			case kindFunc:
				s.u32(fi)
				fi++
			case kindMemory:
				s.limits(it.imp.mem)
			case kindGlobal:
				s.byte(it.imp.global.val)
				if it.imp.global.mutable {
					s.byte(1)
				} else {
					s.byte(0)
				}
			}
		}
	})
	w.section(7, func(s *writer) {
		s.u32(uint32(len(items)))
		var n [5]uint32
		for _, it := range items {
			s.name(it.imp.name)
			s.byte(it.imp.kind)
			s.u32(n[it.imp.kind])
			n[it.imp.kind]++
		}
	})
	return w.b
}

// appendSLEB appends v in signed LEB128, as the format's constants are.
func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
