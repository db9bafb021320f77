// Package blob names content by its SHA-256 hash.
//
// Riot moves code (modules, function sources) and large values (a job's
// dictionary) as content-addressed blobs: a master uploads a blob once per
// tracker, a worker fetches it once on a miss and caches it. Everything that
// refers to a blob does so by its Hash.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Size is the length of a Hash in bytes.
const Size = sha256.Size

// Hash is the SHA-256 digest of a blob's bytes. The zero Hash names no blob.
type Hash [Size]byte

// Sum returns the Hash of data.
func Sum(data []byte) Hash { return sha256.Sum256(data) }

// IsZero reports whether h is the zero Hash.
func (h Hash) IsZero() bool { return h == Hash{} }

// String returns h as 64 lowercase hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Short returns the first 12 hex digits of h, for logs and messages.
func (h Hash) Short() string { return hex.EncodeToString(h[:6]) }

// Parse parses 64 hex digits into a Hash.
func Parse(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*Size {
		return h, fmt.Errorf("blob: hash %q has %d characters, want %d", s, len(s), 2*Size)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("blob: hash %q: %w", s, err)
	}
	return h, nil
}

// FromBytes returns the Hash held in b, which must be Size bytes long.
func FromBytes(b []byte) (Hash, error) {
	var h Hash
	if len(b) != Size {
		return h, fmt.Errorf("blob: hash of %d bytes, want %d", len(b), Size)
	}
	copy(h[:], b)
	return h, nil
}

// ErrNotFound is returned by a Source that does not hold the asked-for blob.
var ErrNotFound = errors.New("blob: not found")

// Source gives the bytes of blobs by hash. A worker's Source fetches from the
// tracker on a miss; a master's serves what it has uploaded. Implementations
// must return bytes whose Sum is the asked-for hash, and must be safe for
// concurrent use.
type Source interface {
	Blob(ctx context.Context, h Hash) ([]byte, error)
}

// Checked is a Source whose bytes have been checked against their hash
// already (a worker's cache of blobs fetched with client.FetchBlob, which
// checks each): a consumer need not hash them again, a pass over each
// large value saved.
type Checked interface {
	Source
	// BlobsChecked marks the Source; it does nothing.
	BlobsChecked()
}

// Taker is a Source that can give a blob's bytes away (a worker's cache,
// for a blob too large for it to keep). Take returns blob h as Blob does,
// and whether the bytes are the caller's alone: the source keeps no
// reference to them and gave them to no one else, so the caller may change
// them (build values over them rather than copy them). When own is false
// they are shared, as Blob's, and must not be changed.
type Taker interface {
	Source
	Take(ctx context.Context, h Hash) (data []byte, own bool, err error)
}

// Map is a Source held in memory. It is safe for concurrent reads once
// filled; callers that write while others read must lock around it.
type Map map[Hash][]byte

// Put stores data under its Hash and returns the Hash.
func (m Map) Put(data []byte) Hash {
	h := Sum(data)
	m[h] = data
	return h
}

// Blob implements Source.
func (m Map) Blob(_ context.Context, h Hash) ([]byte, error) {
	b, ok := m[h]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, h.Short())
	}
	return b, nil
}
