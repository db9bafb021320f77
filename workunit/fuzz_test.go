package workunit

import (
	"bytes"
	"testing"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
)

// FuzzSpecUnmarshal checks that no bytes make Spec.UnmarshalBinary (what a
// tracker does with each submission, and a worker with each assignment)
// panic, and that what decodes is stable: encoding it and decoding again
// gives the same spec, the same key, and the same bytes once more.
// Seeds: a spec of each kind.
func FuzzSpecUnmarshal(f *testing.F) {
	for _, s := range []Spec{
		{Kind: Eval, Source: "1 + 1", Name: "job.js"},
		{Kind: Call, Name: "m.js", Module: blob.Hash{1}, Export: "f", Payload: []byte{0x81, 0x01}, Blobs: []blob.Hash{{1}, {2}}},
		{Kind: Fn, Name: "fn.js", Payload: []byte{0x82, 0x01, 0x02}},
	} {
		b, err := s.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Spec
		err := s.UnmarshalBinary(data)
		if _, kerr := KeyOf(data); (kerr == nil) != (err == nil) {
			t.Fatalf("KeyOf says %v where UnmarshalBinary says %v", kerr, err)
		}
		if err != nil {
			return
		}
		first, err := s.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded spec does not encode: %v", err)
		}
		var again Spec
		if err := again.UnmarshalBinary(first); err != nil {
			t.Fatalf("MarshalBinary wrote %x, which does not decode: %v", first, err)
		}
		if again.Key() != s.Key() {
			t.Fatalf("the key changed through a round trip")
		}
		if k, err := KeyOf(first); err != nil || k != s.Key() {
			t.Fatalf("KeyOf of the encoding gives %v, %v; want the spec's key %v", k, err, s.Key())
		}
		second, _ := again.MarshalBinary()
		if !bytes.Equal(first, second) {
			t.Fatalf("not stable: %x then %x", first, second)
		}
	})
}

// FuzzModuleUnmarshal checks the same of Module.UnmarshalBinary (what a
// worker does with each module blob it fetches): no panic, and a stable
// round trip with the same hash.
func FuzzModuleUnmarshal(f *testing.F) {
	for _, m := range []Module{
		{Path: "/job/a.js", Source: "exports.f = () => 1;"},
		{Path: "/job/b.js", Source: "const a = require('./a');", Requires: map[string]blob.Hash{"./a": {3}, "lodash": {4}}},
	} {
		b, err := m.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Module
		if err := m.UnmarshalBinary(data); err != nil {
			return
		}
		first, _ := m.MarshalBinary()
		var again Module
		if err := again.UnmarshalBinary(first); err != nil {
			t.Fatalf("MarshalBinary wrote %x, which does not decode: %v", first, err)
		}
		if again.Hash() != m.Hash() {
			t.Fatalf("the hash changed through a round trip")
		}
		second, _ := again.MarshalBinary()
		if !bytes.Equal(first, second) {
			t.Fatalf("not stable: %x then %x", first, second)
		}
	})
}

// FuzzReadConsole checks that no bytes make ReadConsole (what a tracker does
// with each result's console) panic, and that what it accepts is exactly
// what Lines decodes, and encodes back to the same bytes.
func FuzzReadConsole(f *testing.F) {
	f.Add([]byte(EncodeConsole([]ConsoleLine{{LevelLog, "hi"}, {LevelError, "boom"}})))
	f.Add([]byte{0x80})
	f.Add([]byte{0x81, 0x82, 0x60, 0x61, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := cbor.NewReader(data)
		c, err := ReadConsole(r)
		if err != nil || r.Remaining() != 0 {
			return
		}
		lines, err := c.Lines()
		if err != nil {
			t.Fatalf("ReadConsole accepted %x, which Lines refuses: %v", data, err)
		}
		if again := EncodeConsole(lines); !bytes.Equal(again, c) {
			t.Fatalf("not stable: %x then %x", c, again)
		}
	})
}
