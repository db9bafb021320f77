package workunit

import (
	"fmt"
	"sort"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
)

// Module is a CommonJS module as it travels: its path on the master (for
// stack traces and messages), its source, and the blob of every module that
// its require calls name, by the exact string they pass. A module is a blob;
// its hash covers all three, so a changed file, or a changed dependency,
// is a different module.
type Module struct {
	Path     string
	Source   string
	Requires map[string]blob.Hash
}

// MarshalBinary encodes the module as a CBOR array [path, source, requires],
// with requires sorted by name so that equal modules have equal bytes.
func (m *Module) MarshalBinary() ([]byte, error) {
	var w cbor.Writer
	w.ArrayHeader(3)
	w.String(m.Path)
	w.String(m.Source)
	names := make([]string, 0, len(m.Requires))
	for n := range m.Requires {
		names = append(names, n)
	}
	sort.Strings(names)
	w.MapHeader(len(names))
	for _, n := range names {
		h := m.Requires[n]
		w.String(n)
		w.ByteString(h[:])
	}
	return w.Bytes(), nil
}

// Hash returns the hash of the module's encoding, its blob name.
func (m *Module) Hash() blob.Hash {
	b, _ := m.MarshalBinary()
	return blob.Sum(b)
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (m *Module) UnmarshalBinary(data []byte) error {
	r := cbor.NewReader(data)
	if err := m.read(r); err != nil {
		return fmt.Errorf("workunit: module: %w", err)
	}
	if r.Remaining() != 0 {
		return fmt.Errorf("workunit: module: %d bytes after the end", r.Remaining())
	}
	return nil
}

func (m *Module) read(r *cbor.Reader) error {
	h, err := r.Next()
	if err != nil {
		return err
	}
	if h.Major != cbor.MajorArray || h.Arg != 3 {
		return r.Errorf("want an array of 3 items")
	}
	if m.Path, err = r.Text(); err != nil {
		return err
	}
	if m.Source, err = r.Text(); err != nil {
		return err
	}
	h, err = r.Next()
	if err != nil {
		return err
	}
	if h.Major != cbor.MajorMap {
		return r.Errorf("want a map of requires")
	}
	if err := r.CheckCount(h.Arg, 2+blob.Size); err != nil {
		return err
	}
	m.Requires = make(map[string]blob.Hash, h.Arg)
	for i := uint64(0); i < h.Arg; i++ {
		name, err := r.Text()
		if err != nil {
			return err
		}
		b, err := r.ByteString()
		if err != nil {
			return err
		}
		if m.Requires[name], err = blob.FromBytes(b); err != nil {
			return err
		}
	}
	return nil
}
