package store

import (
	"context"
	"testing"

	"github.com/riot-go/riot/blob"
)

// BenchmarkMemory_Blobs measures a Memory store's blob writes, which
// count the bytes they hold (Memory.BlobBytes): whole (PutBlob, 64 KiB
// each, distinct) and in pieces (CreateBlob, Write in 1 MiB pieces,
// Commit; 4 MiB each, distinct).
func BenchmarkMemory_Blobs(b *testing.B) {
	ctx := context.Background()
	b.Run("put-64KiB", func(b *testing.B) {
		m := NewMemory()
		data := make([]byte, 64<<10)
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
			if err := m.PutBlob(ctx, blob.Sum(data), data); err != nil {
				b.Fatal(err)
			}
			if i%1024 == 1023 {
				m = NewMemory() // bounded: the heap does not grow without end
			}
		}
	})
	b.Run("pieces-4MiB", func(b *testing.B) {
		m := NewMemory()
		data := make([]byte, 4<<20)
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
			w, err := m.CreateBlob(ctx, blob.Sum(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			for off := 0; off < len(data); off += 1 << 20 {
				if _, err := w.Write(data[off : off+1<<20]); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			if i%16 == 15 {
				m = NewMemory()
			}
		}
	})
}
