// Package cbor reads and writes CBOR (RFC 8949) data items: the bytes under
// riot's protocol frames (package wire), its store records (tracker/store),
// its workunit specs (package workunit) and its value documents (package
// value, which gives the items their JavaScript meaning).
//
// It is deliberately small: a Writer that appends heads and leaves in their
// preferred (shortest) form, and a Reader that reads them back one head at a
// time without copying. Neither knows a schema; callers write the items of
// an array or a map after its head, in the order their format says.
//
// # Usage
//
//	var w cbor.Writer
//	w.ArrayHeader(2)
//	w.Text("riot")
//	w.Int(2355)
//	data := w.Bytes()
//
//	r := cbor.NewReader(data)
//	h, err := r.Next() // h.Major == cbor.MajorArray, h.Arg == 2
//	name, err := r.Text()
//	port, err := r.Uint()
//
// # Safety
//
// A Reader never reads past its data, never panics, and never allocates
// from a length it has not checked against the bytes left: CheckCount lets
// a caller do the same before it makes room for a claimed number of items.
// Indefinite lengths are refused. Malformed data is a *SyntaxError with the
// byte offset where it starts.
//
// A Writer and a Reader are each for one goroutine at a time.
package cbor
