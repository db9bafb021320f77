// Package workunit defines what a workunit is: its kinds, its content
// (Spec), its key, the modules it ships, and the error a failed one gives.
//
// A workunit is JavaScript plus serialized arguments. Masters build Specs,
// the tracker stores and routes them as opaque bytes keyed by Key, and
// workers hand them to the engine. Nothing here runs JavaScript or touches
// the network.
package workunit

import (
	"crypto/sha256"
	"fmt"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
)

// Kind is the kind of a workunit.
type Kind uint8

// The three kinds of workunit.
const (
	// Eval evaluates Source as a script; the value of its last expression
	// is the result (riot.doWorkEval, Riot's do-work/eval).
	Eval Kind = 1
	// Call calls Export of the CommonJS module Module with the arguments
	// in Payload (riot.doWorkCall, Riot's do-work/call).
	Call Kind = 2
	// Fn calls a captured function with arguments; Payload holds both
	// (riot.doWork, Riot's do-work).
	Fn Kind = 3
)

// String returns the kind's name: "eval", "call" or "fn".
func (k Kind) String() string {
	switch k {
	case Eval:
		return "eval"
	case Call:
		return "call"
	case Fn:
		return "fn"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Spec is the content of a workunit: everything a worker needs to run it,
// and everything its Key covers.
type Spec struct {
	Kind Kind
	// Source is the script of an Eval workunit.
	Source string
	// Name is the file name that stack traces give for Source (Eval) or
	// for the function (Fn, unless the function names its own file).
	Name string
	// Module is the hash of the Call workunit's module blob (see Module).
	Module blob.Hash
	// Export is the name of the Call workunit's exported function.
	Export string
	// Payload is a value-encoded array. Call: the arguments. Fn: the
	// function (a value.Function) followed by the arguments, in one
	// document so that references shared between them are kept.
	Payload []byte
	// Blobs lists the blobs the workunit needs besides Payload's bytes:
	// every module it may require, transitively, and every value stored
	// as a blob. Workers fetch the missing ones before they start.
	Blobs []blob.Hash
}

// Key identifies a workunit by its content: the same Key is the same work,
// whose finished result may be answered from memory (Riot's memoization).
type Key [sha256.Size]byte

// String returns the key in hex.
func (k Key) String() string { return blob.Hash(k).String() }

// Short returns the first 12 hex digits of the key.
func (k Key) Short() string { return blob.Hash(k).Short() }

// ParseKey parses 64 hex digits.
func ParseKey(s string) (Key, error) {
	h, err := blob.Parse(s)
	if err != nil {
		return Key{}, fmt.Errorf("workunit: key: %w", err)
	}
	return Key(h), nil
}

// Key returns the workunit's key: a SHA-256 over its kind, name, code and
// payload. Blobs are not covered on their own: the payload and module hash
// already name them.
func (s *Spec) Key() Key {
	h := sha256.New()
	var w cbor.Writer
	w.Text("riot-workunit-1")
	s.writeContent(&w)
	h.Write(w.Bytes())
	var k Key
	h.Sum(k[:0])
	return k
}

func (s *Spec) writeContent(w *cbor.Writer) {
	w.Int(int64(s.Kind))
	w.String(s.Source)
	w.String(s.Name)
	w.ByteString(s.Module[:])
	w.String(s.Export)
	w.ByteString(s.Payload)
}

// MarshalBinary encodes the Spec as a CBOR array.
func (s *Spec) MarshalBinary() ([]byte, error) {
	var w cbor.Writer
	w.ArrayHeader(7)
	s.writeContent(&w)
	w.ArrayHeader(len(s.Blobs))
	for _, b := range s.Blobs {
		w.ByteString(b[:])
	}
	return w.Bytes(), nil
}

// UnmarshalBinary decodes what MarshalBinary wrote. It checks the form, not
// the JavaScript.
func (s *Spec) UnmarshalBinary(data []byte) error {
	r := cbor.NewReader(data)
	if err := s.read(r); err != nil {
		return fmt.Errorf("workunit: spec: %w", err)
	}
	if r.Remaining() != 0 {
		return fmt.Errorf("workunit: spec: %d bytes after the end", r.Remaining())
	}
	return s.Validate()
}

func (s *Spec) read(r *cbor.Reader) error {
	h, err := r.Next()
	if err != nil {
		return err
	}
	if h.Major != cbor.MajorArray || h.Arg != 7 {
		return r.Errorf("want an array of 7 items")
	}
	kind, err := r.Uint()
	if err != nil {
		return err
	}
	if kind > 255 {
		return r.Errorf("kind %d", kind)
	}
	s.Kind = Kind(kind)
	if s.Source, err = r.Text(); err != nil {
		return err
	}
	if s.Name, err = r.Text(); err != nil {
		return err
	}
	mod, err := r.ByteString()
	if err != nil {
		return err
	}
	if s.Module, err = blob.FromBytes(mod); err != nil {
		return err
	}
	if s.Export, err = r.Text(); err != nil {
		return err
	}
	payload, err := r.ByteString()
	if err != nil {
		return err
	}
	s.Payload = append([]byte(nil), payload...)
	h, err = r.Next()
	if err != nil {
		return err
	}
	if h.Major != cbor.MajorArray {
		return r.Errorf("want an array of blob hashes")
	}
	if err := r.CheckCount(h.Arg, 1+blob.Size); err != nil {
		return err
	}
	s.Blobs = make([]blob.Hash, h.Arg)
	for i := range s.Blobs {
		b, err := r.ByteString()
		if err != nil {
			return err
		}
		if s.Blobs[i], err = blob.FromBytes(b); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks that the fields a kind needs are there.
func (s *Spec) Validate() error {
	switch s.Kind {
	case Eval:
		if s.Module != (blob.Hash{}) || s.Export != "" || len(s.Payload) != 0 {
			return fmt.Errorf("workunit: an eval workunit has only a source")
		}
	case Call:
		if s.Module.IsZero() {
			return fmt.Errorf("workunit: a call workunit needs a module hash")
		}
		if s.Export == "" {
			return fmt.Errorf("workunit: a call workunit needs an export name")
		}
	case Fn:
		if len(s.Payload) == 0 {
			return fmt.Errorf("workunit: a fn workunit needs a payload holding its function")
		}
	default:
		return fmt.Errorf("workunit: unknown kind %d", s.Kind)
	}
	return nil
}
