// Package workunit is the vocabulary every part of riot shares about a
// workunit: its kinds, its content (Spec) and key, the options of a
// submission (Options), where it stands (Status), what the tracker reports
// of it (Outcome), its console output (Console), the modules it ships
// (Module), and the error a failed one gives (Error).
//
// A workunit is JavaScript plus serialized arguments. Masters build Specs,
// the tracker stores and routes them as opaque bytes keyed by Key (computed
// from those bytes: KeyOf), and workers hand them to the engine. Each layer
// uses these types as they are and converts only where it must: the
// protocol (package wire) carries them, the tracker's table makes
// Outcomes, masters read them. Nothing here runs JavaScript or touches the
// network.
package workunit

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"slices"
	"sync"

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
	// Nonce, when not empty, makes the spec a workunit of its own: it is
	// covered by the Key and read by nothing else, so that equal work
	// with different nonces is different workunits. Submissions with
	// Options.NoCache get a fresh one (NewNonce) from the client, so that
	// every such call runs. At most MaxNonceBytes.
	Nonce []byte
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

// MaxNonceBytes is the longest Spec.Nonce.
const MaxNonceBytes = 32

// NewNonce returns a fresh random nonce for Spec.Nonce: 16 bytes, so that
// no two are ever equal.
func NewNonce() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}

// keyDomain is hashed before a spec's content, so that a key is never the
// hash of other riot data.
const keyDomain = "riot-workunit-1"

// Key returns the workunit's key: a SHA-256 over its kind, source, name,
// module, export, payload and nonce, as they stand in its encoding
// (MarshalBinary). Blobs are not
// covered on their own: the payload and module hash already name them. A
// caller that sends the spec should use Encode, which serializes it once
// for both.
func (s *Spec) Key() Key {
	_, k := s.Encode()
	return k
}

// Encode returns the spec's encoding (as MarshalBinary) and its key,
// computed from those bytes: the spec is serialized once.
func (s *Spec) Encode() ([]byte, Key) {
	// A master may keep millions of encodings (one per workunit it
	// waits for): the buffer is made at its exact size, not grown.
	w := cbor.NewWriter(make([]byte, 0, s.encodedLen()))
	if len(s.Nonce) > 0 {
		w.ArrayHeader(8)
	} else {
		w.ArrayHeader(7)
	}
	w.Int(int64(s.Kind))
	w.String(s.Source)
	w.String(s.Name)
	w.ByteString(s.Module[:])
	w.String(s.Export)
	w.ByteString(s.Payload)
	if len(s.Nonce) > 0 {
		w.ByteString(s.Nonce)
	}
	end := w.Len()
	w.ArrayHeader(len(s.Blobs))
	for _, b := range s.Blobs {
		w.ByteString(b[:])
	}
	data := w.Bytes()
	return data, keyOf(data[1:end])
}

// encodedLen returns the length of s's encoding, as Encode writes it.
func (s *Spec) encodedLen() int {
	n := 1 + cbor.HeadLen(uint64(s.Kind)) // the array's head (7 or 8), the kind
	for _, l := range [...]int{len(s.Source), len(s.Name), len(s.Module), len(s.Export), len(s.Payload)} {
		n += cbor.HeadLen(uint64(l)) + l
	}
	if len(s.Nonce) > 0 {
		n += cbor.HeadLen(uint64(len(s.Nonce))) + len(s.Nonce)
	}
	n += cbor.HeadLen(uint64(len(s.Blobs))) + len(s.Blobs)*(cbor.HeadLen(uint64(len(blob.Hash{})))+len(blob.Hash{}))
	return n
}

// keyPrefix is keyDomain's encoding, hashed before a spec's content.
var keyPrefix = func() []byte {
	var w cbor.Writer
	w.Text(keyDomain)
	return w.Bytes()
}()

// keyHasher is a SHA-256 state and the buffer its sum is written to: a
// sum written to the caller's Key through the hash.Hash interface would
// make the Key escape, one allocation a spec.
type keyHasher struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

// hashers keeps keyHashers for keyOf: a key is computed for every
// workunit submitted, and a state is a few hundred bytes to allocate.
var hashers = sync.Pool{New: func() any { return &keyHasher{h: sha256.New()} }}

// keyOf hashes the content items of a spec's encoding (kind to payload,
// and the nonce when there is one).
func keyOf(content []byte) Key {
	kh := hashers.Get().(*keyHasher)
	kh.h.Reset()
	kh.h.Write(keyPrefix)
	kh.h.Write(content)
	k := Key(kh.h.Sum(kh.sum[:0]))
	hashers.Put(kh)
	return k
}

// MarshalBinary encodes the Spec as a CBOR array: [kind, source, name,
// module, export, payload, [blob...]], or, with a nonce, [kind, source,
// name, module, export, payload, nonce, [blob...]].
func (s *Spec) MarshalBinary() ([]byte, error) {
	data, _ := s.Encode()
	return data, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote. It checks the form, not
// the JavaScript.
func (s *Spec) UnmarshalBinary(data []byte) error {
	var v specView
	if _, err := v.read(data); err != nil {
		return err
	}
	*s = Spec{
		Kind:    v.kind,
		Source:  string(v.source),
		Name:    string(v.name),
		Module:  v.module,
		Export:  string(v.export),
		Payload: append([]byte(nil), v.payload...),
		Blobs:   v.blobs,
	}
	if len(v.nonce) > 0 {
		s.Nonce = append([]byte(nil), v.nonce...)
	}
	return nil
}

// KeyOf checks a spec's encoding as UnmarshalBinary does and returns its
// key, computed from data itself: a tracker that receives a spec needs its
// key and its bytes, not a Spec.
func KeyOf(data []byte) (Key, error) {
	var v specView
	end, err := v.read(data)
	if err != nil {
		return Key{}, err
	}
	return keyOf(data[1:end]), nil
}

// BlobsOf checks a spec's encoding as KeyOf does and returns its key and
// the blobs it names: its Blobs and its Module (a Call's, when not in
// Blobs), in that order, without decoding the rest of it. A tracker that
// frees blobs no workunit needs reads them this way.
func BlobsOf(data []byte) (Key, []blob.Hash, error) {
	var v specView
	end, err := v.read(data)
	if err != nil {
		return Key{}, nil, err
	}
	blobs := v.blobs
	if v.module != (blob.Hash{}) && !slices.Contains(blobs, v.module) {
		blobs = append(blobs, v.module)
	}
	return keyOf(data[1:end]), blobs, nil
}

// specView is a spec as its encoding holds it: the byte fields alias the
// data.
type specView struct {
	kind                          Kind
	source, name, export, payload []byte
	nonce                         []byte
	module                        blob.Hash
	blobs                         []blob.Hash
}

// read decodes data into v, checks it (Validate's rules), and returns the
// offset where the content items end and the blob list begins.
func (v *specView) read(data []byte) (contentEnd int, err error) {
	r := cbor.NewReader(data)
	if contentEnd, err = v.readItems(r); err != nil {
		return 0, fmt.Errorf("workunit: spec: %w", err)
	}
	if r.Remaining() != 0 {
		return 0, fmt.Errorf("workunit: spec: %d bytes after the end", r.Remaining())
	}
	if err := validate(v.kind, v.module, len(v.export) > 0, len(v.payload) > 0, len(v.nonce)); err != nil {
		return 0, err
	}
	return contentEnd, nil
}

func (v *specView) readItems(r *cbor.Reader) (int, error) {
	h, err := r.Next()
	if err != nil {
		return 0, err
	}
	if h.Major != cbor.MajorArray || (h.Arg != 7 && h.Arg != 8) || r.Offset() != 1 {
		return 0, r.Errorf("want an array of 7 items (8 with a nonce)")
	}
	withNonce := h.Arg == 8
	kind, err := r.Uint()
	if err != nil {
		return 0, err
	}
	if kind > 255 {
		return 0, r.Errorf("kind %d", kind)
	}
	v.kind = Kind(kind)
	if v.source, err = textBytes(r); err != nil {
		return 0, err
	}
	if v.name, err = textBytes(r); err != nil {
		return 0, err
	}
	mod, err := r.ByteString()
	if err != nil {
		return 0, err
	}
	if v.module, err = blob.FromBytes(mod); err != nil {
		return 0, err
	}
	if v.export, err = textBytes(r); err != nil {
		return 0, err
	}
	if v.payload, err = r.ByteString(); err != nil {
		return 0, err
	}
	if withNonce {
		if v.nonce, err = r.ByteString(); err != nil {
			return 0, err
		}
		if len(v.nonce) == 0 {
			return 0, r.Errorf("an empty nonce (a spec without one has 7 items)")
		}
	}
	end := r.Offset()
	h, err = r.Next()
	if err != nil {
		return 0, err
	}
	if h.Major != cbor.MajorArray {
		return 0, r.Errorf("want an array of blob hashes")
	}
	if err := r.CheckCount(h.Arg, 1+blob.Size); err != nil {
		return 0, err
	}
	if h.Arg > 0 {
		v.blobs = make([]blob.Hash, h.Arg)
	}
	for i := range v.blobs {
		b, err := r.ByteString()
		if err != nil {
			return 0, err
		}
		if v.blobs[i], err = blob.FromBytes(b); err != nil {
			return 0, err
		}
	}
	return end, nil
}

// Validate checks that the fields a kind needs are there.
func (s *Spec) Validate() error {
	return validate(s.Kind, s.Module, s.Export != "", len(s.Payload) > 0, len(s.Nonce))
}

func validate(kind Kind, module blob.Hash, export, payload bool, nonce int) error {
	if nonce > MaxNonceBytes {
		return fmt.Errorf("workunit: a nonce of %d bytes; at most %d", nonce, MaxNonceBytes)
	}
	switch kind {
	case Eval:
		if !module.IsZero() || export || payload {
			return fmt.Errorf("workunit: an eval workunit has only a source")
		}
	case Call:
		if module.IsZero() {
			return fmt.Errorf("workunit: a call workunit needs a module hash")
		}
		if !export {
			return fmt.Errorf("workunit: a call workunit needs an export name")
		}
	case Fn:
		if !payload {
			return fmt.Errorf("workunit: a fn workunit needs a payload holding its function")
		}
	default:
		return fmt.Errorf("workunit: unknown kind %d", kind)
	}
	return nil
}
