package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// The layout of a bbolt file (version 2), as far as checkFile reads it.
// bbolt writes its structures in the machine's byte order; riot runs on
// little-endian machines (amd64, arm64).
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	metaSumSize      = 56 // the meta fields before its checksum
	flagBranch       = 0x01
	flagLeaf         = 0x02
	flagMeta         = 0x04
	flagFreelist     = 0x10
	leafBucketFlag   = 0x01
	noFreelist       = ^uint64(0)
	// maxTreeDepth bounds the nesting of pages and buckets: a real store
	// is a few levels deep; a deeper one is a loop that checkFile's page
	// set did not catch, or garbage.
	maxTreeDepth = 64
)

var le = binary.LittleEndian

// boltMeta is one of a bbolt file's two meta pages, decoded.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64 // the high-water mark: pages [0, hwm) are in use or free
	txid     uint64
	err      error // why it is invalid, nil if it is valid
}

func parseMeta(page []byte) boltMeta {
	if len(page) < pageHeaderSize+metaSumSize+8 {
		return boltMeta{err: errors.New("short")}
	}
	b := page[pageHeaderSize:]
	m := boltMeta{
		pageSize: le.Uint32(b[8:]),
		root:     le.Uint64(b[16:]),
		freelist: le.Uint64(b[32:]),
		hwm:      le.Uint64(b[40:]),
		txid:     le.Uint64(b[48:]),
	}
	h := fnv.New64a()
	h.Write(b[:metaSumSize])
	switch {
	case le.Uint32(b) != boltMagic:
		m.err = errors.New("no bbolt magic number")
	case le.Uint32(b[4:]) != boltVersion:
		m.err = fmt.Errorf("bbolt format version %d, not %d", le.Uint32(b[4:]), boltVersion)
	case le.Uint64(b[metaSumSize:]) != h.Sum64():
		m.err = errors.New("checksum mismatch")
	case le.Uint16(page[8:])&flagMeta == 0:
		m.err = errors.New("not a meta page")
	case m.pageSize < 1024 || m.pageSize > 64<<10 || m.pageSize&(m.pageSize-1) != 0:
		m.err = fmt.Errorf("page size %d", m.pageSize)
	}
	return m
}

// checkFile reads the bbolt file at path, without bbolt and without
// mapping it, and checks what bbolt trusts when it opens and reads a file
// (it follows page numbers into its memory map unchecked, and faults or
// panics on garbage, some of that in goroutines of its own where no
// recover can catch it): the meta pages, the file's size against their
// high-water mark, and every page of every bucket's tree (in bounds, of
// the right type, visited once, its elements inside it). It returns the
// meta bbolt will use (the valid one of the later transaction), and the
// state of both. A file that fails is damaged: the error wraps ErrCorrupt.
//
// It reads the whole tree once, as bbolt does at every open to rebuild its
// free list: its cost grows with the file (about 0.35 s a GB, from the
// page cache: BenchmarkBolt_OpenCheck).
func checkFile(path string) (meta boltMeta, metas [2]boltMeta, err error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, fmt.Sprintf(format, args...))
	}
	f, err := os.Open(path)
	if err != nil {
		return meta, metas, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return meta, metas, fmt.Errorf("store: %w", err)
	}
	size := fi.Size()
	read := func(off int64, n int) ([]byte, error) {
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, corrupt("the file ends at byte %d, inside a page at %d (truncated?)", size, off)
			}
			return nil, fmt.Errorf("store: read %s: %w", path, err)
		}
		return buf, nil
	}
	if size < 2*1024 {
		return meta, metas, corrupt("%d bytes, too short for a bbolt file (truncated?)", size)
	}
	first, err := read(0, 1024)
	if err != nil {
		return meta, metas, err
	}
	metas[0] = parseMeta(first)
	psize := int64(metas[0].pageSize)
	if metas[0].err != nil {
		// Find the second meta page, at the page size, as bbolt does.
		psize = 0
		for p := int64(1024); p <= 64<<10 && p+1024 <= size; p *= 2 {
			b, err := read(p, 1024)
			if err != nil {
				return meta, metas, err
			}
			if m := parseMeta(b); m.err == nil && int64(m.pageSize) == p {
				psize = p
				break
			}
		}
		if psize == 0 {
			return meta, metas, corrupt("neither meta page is valid (the first: %v), not a bbolt file or both are damaged", metas[0].err)
		}
	}
	if size < 2*psize {
		return meta, metas, corrupt("%d bytes, shorter than its two meta pages of %d (truncated?)", size, psize)
	}
	second, err := read(psize, 1024)
	if err != nil {
		return meta, metas, err
	}
	metas[1] = parseMeta(second)
	if metas[1].err == nil && int64(metas[1].pageSize) != psize {
		metas[1].err = fmt.Errorf("page size %d, the other's is %d", metas[1].pageSize, psize)
	}
	// bbolt's choice: the later transaction's meta if valid, else the other.
	a, b := metas[0], metas[1]
	if b.txid > a.txid {
		a, b = b, a
	}
	switch {
	case a.err == nil:
		meta = a
	case b.err == nil:
		meta = b
	default:
		return meta, metas, corrupt("both meta pages are damaged (%v; %v)", metas[0].err, metas[1].err)
	}
	if meta.hwm < 3 || meta.hwm > uint64(size/psize) {
		return meta, metas, corrupt("%d bytes hold %d pages of %d, its meta page says %d (truncated?)",
			size, size/psize, psize, meta.hwm)
	}
	w := walker{f: f, path: path, size: size, psize: psize, hwm: meta.hwm, seen: make([]uint64, (meta.hwm+63)/64)}
	w.seen[0] = 3 // the meta pages
	if meta.freelist != noFreelist {
		if _, _, _, err := w.page(meta.freelist, flagFreelist, 0); err != nil {
			return meta, metas, fmt.Errorf("%w (the free list)", err)
		}
	}
	if err := w.tree(meta.root, 0); err != nil {
		return meta, metas, err
	}
	return meta, metas, nil
}

// walker reads a bbolt file's pages for checkFile.
type walker struct {
	f     *os.File
	path  string
	size  int64
	psize int64
	hwm   uint64
	seen  []uint64 // a bit a page below hwm: reached already
	// bufs are the page buffers, one a depth of the tree: a page's bytes
	// are needed until its elements are checked, which reads the pages
	// below it (depth+1 and deeper) only, so each depth reuses its own
	// (a buffer a page was 245 MB allocated and cleared for a store of a
	// million records).
	bufs [][]byte
}

func (w *walker) reached(id uint64) bool { return w.seen[id/64]&(1<<(id%64)) != 0 }

func (w *walker) corrupt(id uint64, format string, args ...any) error {
	return fmt.Errorf("%w: %s: page %d: %s", ErrCorrupt, w.path, id, fmt.Sprintf(format, args...))
}

// page reads page id (and its overflow pages), which must be of type flag
// (0: a branch or a leaf) and seen for the first time, and returns its
// flags, count and bytes.
func (w *walker) page(id uint64, flag uint16, depth int) (flags uint16, count int, data []byte, err error) {
	if id < 2 || id >= w.hwm {
		return 0, 0, nil, w.corrupt(id, "out of bounds (pages 2 to %d are in use)", w.hwm-1)
	}
	if w.reached(id) {
		return 0, 0, nil, w.corrupt(id, "referenced twice")
	}
	for len(w.bufs) <= depth {
		w.bufs = append(w.bufs, nil)
	}
	if int64(cap(w.bufs[depth])) < w.psize {
		w.bufs[depth] = make([]byte, w.psize)
	}
	first := w.bufs[depth][:w.psize]
	if _, err := w.f.ReadAt(first, int64(id)*w.psize); err != nil {
		return 0, 0, nil, fmt.Errorf("store: read %s: page %d: %w", w.path, id, err)
	}
	if got := le.Uint64(first); got != id {
		return 0, 0, nil, w.corrupt(id, "its header says page %d", got)
	}
	flags = le.Uint16(first[8:])
	switch {
	case flag == 0 && flags != flagBranch && flags != flagLeaf:
		return 0, 0, nil, w.corrupt(id, "of type %#x, not a branch or a leaf", flags)
	case flag != 0 && flags != flag:
		return 0, 0, nil, w.corrupt(id, "of type %#x, want %#x", flags, flag)
	}
	overflow := uint64(le.Uint32(first[12:]))
	if id+overflow >= w.hwm {
		return 0, 0, nil, w.corrupt(id, "%d overflow pages run past the last page, %d", overflow, w.hwm-1)
	}
	for i := id; i <= id+overflow; i++ {
		if w.reached(i) {
			return 0, 0, nil, w.corrupt(i, "referenced twice")
		}
		w.seen[i/64] |= 1 << (i % 64)
	}
	data = first
	if overflow > 0 {
		n := int64(overflow+1) * w.psize
		if int64(cap(w.bufs[depth])) < n {
			w.bufs[depth] = make([]byte, n)
			copy(w.bufs[depth], first)
		}
		data = w.bufs[depth][:n]
		if _, err := w.f.ReadAt(data[w.psize:], int64(id+1)*w.psize); err != nil {
			return 0, 0, nil, fmt.Errorf("store: read %s: page %d: %w", w.path, id, err)
		}
	}
	return flags, int(le.Uint16(first[10:])), data, nil
}

// tree checks the pages of the B+tree rooted at page root.
func (w *walker) tree(root uint64, depth int) error {
	if depth > maxTreeDepth {
		return w.corrupt(root, "nested more than %d deep", maxTreeDepth)
	}
	flags, count, data, err := w.page(root, 0, depth)
	if err != nil {
		return err
	}
	return w.elements(root, flags, count, data, depth)
}

// elements checks the elements of a page's bytes data (a page, or an
// inline bucket's page) and what they point to.
func (w *walker) elements(id uint64, flag uint16, count int, data []byte, depth int) error {
	if flag != flagBranch && flag != flagLeaf {
		return w.corrupt(id, "of type %#x, not a branch or a leaf", flag)
	}
	if flag == flagBranch && count == 0 {
		return w.corrupt(id, "a branch without elements")
	}
	if pageHeaderSize+count*elementSize > len(data) {
		return w.corrupt(id, "%d elements do not fit in its %d bytes", count, len(data))
	}
	for i := range count {
		at := pageHeaderSize + i*elementSize
		e := data[at : at+elementSize]
		if flag == flagBranch {
			pos, ksize := int64(le.Uint32(e)), int64(le.Uint32(e[4:]))
			if int64(at)+pos+ksize > int64(len(data)) {
				return w.corrupt(id, "element %d's key lies outside the page", i)
			}
			if err := w.tree(le.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		eflags, pos, ksize, vsize := le.Uint32(e), int64(le.Uint32(e[4:])), int64(le.Uint32(e[8:])), int64(le.Uint32(e[12:]))
		end := int64(at) + pos + ksize + vsize
		if end > int64(len(data)) {
			return w.corrupt(id, "element %d's key and value lie outside the page", i)
		}
		if eflags&leafBucketFlag == 0 {
			continue
		}
		v := data[int64(at)+pos+ksize : end]
		if len(v) < bucketHeaderSize {
			return w.corrupt(id, "element %d is a bucket of %d bytes", i, len(v))
		}
		if root := le.Uint64(v); root != 0 {
			if err := w.tree(root, depth+1); err != nil {
				return err
			}
			continue
		}
		// An inline bucket: its page follows the header, in the value.
		p := v[bucketHeaderSize:]
		if len(p) < pageHeaderSize {
			return w.corrupt(id, "element %d is an inline bucket of %d bytes", i, len(v))
		}
		if depth+1 > maxTreeDepth {
			return w.corrupt(id, "nested more than %d deep", maxTreeDepth)
		}
		if err := w.elements(id, le.Uint16(p[8:]), int(le.Uint16(p[10:])), p, depth+1); err != nil {
			return err
		}
	}
	return nil
}
