package client

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/blob"
)

func TestBlobRefDocument(t *testing.T) {
	t.Parallel()
	h := blob.Sum([]byte("a large result"))
	doc := BlobRefDocument(h)
	assert.Equal(t, "da72696f055820"+h.String(), hex.EncodeToString(doc), "docs/protocol.md, Large values")
	got, ok := blobRefOf(doc)
	assert.True(t, ok)
	assert.Equal(t, h, got)
	for _, d := range [][]byte{nil, {0x03}, doc[:len(doc)-1], append(append([]byte{}, doc...), 0x00)} {
		_, ok := blobRefOf(d)
		assert.False(t, ok, "%x", d)
	}
}
