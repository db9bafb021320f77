package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// recordVersion is the first item of every encoded record. Bump it when
// the layout changes, and keep decoding the old ones. Version 2 is version
// 1 followed by a checksum; version 3 is version 2 with one more item at
// the end of its array, the record's memo scope (table.Record.Scope).
// Version 4 is version 3 (its scope may be empty) with a 15th item, the
// record's retries, and an 8th item in its error, the error's attempts.
// riot reads all four, and writes 2 for a record without a scope (so
// that a store of masters that share their results stays readable by
// older trackers), 3 for one with a scope, and 4 for one with retries.
const (
	recordVersion  = 2
	recordVersion1 = 1
	recordVersion3 = 3
	recordVersion4 = 4
)

// crcTable is CRC-32C's (Castagnoli), which CPUs compute in hardware.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// recordSum is the checksum of a version 2 record: CRC-32C of its ID (8
// bytes, big-endian, as it is keyed) and its array's bytes.
func recordSum(id uint64, array []byte) uint32 {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], id)
	return crc32.Update(crc32.Checksum(k[:], crcTable), crcTable, array)
}

// A record is stored under its ID (8 bytes, big-endian) as one CBOR array:
//
//	[version=1, key (32 bytes), status, seq, [noCache, gpus, timeout],
//	 owner, worker, lastChange (unix ns, 0 for none), deliveries,
//	 [lostFrom...], spec (bytes or null), result (bytes or null),
//	 error (null or [kind, name, message, stack, value (bytes or null),
//	 worker, key])]  checksum
//
// Version 3 adds a 14th item, scope, after error. Version 4 adds a 15th,
// [retries, [retryOn...], [attempt...]], the attempts being those of a
// waiting or running record (table.Record.Attempts), each [worker, name,
// message], and the error has an 8th item, its attempts, [attempt...].
// The checksum (versions 2 to 4) is 4 bytes after the array, big-endian: see recordSum. A byte
// changed on disk anywhere in a record, or in its key, fails it. Version 1
// records have no checksum.
//
// Text is written as byte strings, so that any Go string (JavaScript's
// lone surrogates included) round-trips exactly.
const recordItems = 13

// encodeRecord encodes r from the start of buf's array when it is large
// enough (like cbor.NewWriter), else in a new one.
func encodeRecord(buf []byte, r *table.Record) []byte {
	w := cbor.NewWriter(buf)
	v4 := r.Options.Retries > 0 || (r.Err != nil && len(r.Err.Attempts) > 0)
	switch {
	case v4:
		w.ArrayHeader(recordItems + 2)
		w.Int(recordVersion4)
	case r.Scope != "":
		w.ArrayHeader(recordItems + 1)
		w.Int(recordVersion3)
	default:
		w.ArrayHeader(recordItems)
		w.Int(recordVersion)
	}
	w.ByteString(r.Key[:])
	w.Int(int64(r.Status))
	w.Int(r.Seq)
	w.ArrayHeader(3)
	w.Bool(r.Options.NoCache)
	w.Int(int64(r.Options.GPUs))
	w.Int(r.Options.Timeout.Milliseconds())
	str(w, r.Owner)
	str(w, r.Worker)
	var ns int64
	if !r.LastChange.IsZero() {
		ns = r.LastChange.UnixNano()
	}
	w.Int(ns)
	w.Int(int64(r.Deliveries))
	w.ArrayHeader(len(r.LostFrom))
	for _, n := range r.LostFrom {
		str(w, n)
	}
	bytesOrNull(w, r.Spec)
	bytesOrNull(w, r.Result)
	if e := r.Err; e == nil {
		w.Simple(cbor.SimpleNull)
	} else {
		if v4 {
			w.ArrayHeader(8)
		} else {
			w.ArrayHeader(7)
		}
		w.Int(int64(e.Kind))
		str(w, e.Name)
		str(w, e.Message)
		str(w, e.Stack)
		bytesOrNull(w, e.Value)
		str(w, e.Worker)
		w.ByteString(e.Key[:])
		if v4 {
			encodeAttempts(w, e.Attempts)
		}
	}
	if v4 || r.Scope != "" {
		str(w, r.Scope)
	}
	if v4 {
		w.ArrayHeader(3)
		w.Int(int64(r.Options.Retries))
		w.ArrayHeader(len(r.Options.RetryOn))
		for _, n := range r.Options.RetryOn {
			str(w, n)
		}
		encodeAttempts(w, r.Attempts)
	}
	b := w.Bytes()
	return binary.BigEndian.AppendUint32(b, recordSum(r.ID, b))
}

func encodeAttempts(w *cbor.Writer, as []workunit.Attempt) {
	w.ArrayHeader(len(as))
	for _, a := range as {
		w.ArrayHeader(3)
		str(w, a.Worker)
		str(w, a.Name)
		str(w, a.Message)
	}
}

func str(w *cbor.Writer, s string) {
	w.Head(cbor.MajorBytes, uint64(len(s)))
	w.Raw([]byte(s))
}

func bytesOrNull(w *cbor.Writer, b []byte) {
	if b == nil {
		w.Simple(cbor.SimpleNull)
		return
	}
	w.ByteString(b)
}

// decodeRecord decodes a stored record. data must be the caller's (not
// bbolt's memory): Spec, Result and the error's Value alias it.
func decodeRecord(id uint64, data []byte) (table.Record, error) {
	var rec table.Record
	err := decodeRecordInto(&rec, id, data, nil)
	return rec, err
}

// decodeRecordInto is decodeRecord into *rec, which must be the zero
// Record: a store's Load decodes a million records in place in the slice
// it returns rather than copy each one twice (a Record is 352 bytes).
// names, when not nil, gives the record's owner, worker, scope and lost
// workers' names from the records decoded before it: such a load made two
// million strings of a few names.
func decodeRecordInto(rec *table.Record, id uint64, data []byte, names *nameCache) error {
	rec.ID = id
	// The array head (13 or 14 items) and the version are a byte each.
	if len(data) > 2 && (data[1] == recordVersion || data[1] == recordVersion3 || data[1] == recordVersion4) {
		if len(data) < 6 {
			return fmt.Errorf("%d bytes, too short for a record", len(data))
		}
		array, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
		if got := recordSum(id, array); got != sum {
			return fmt.Errorf("checksum %08x, its bytes sum to %08x: the record was changed on disk", sum, got)
		}
		data = array
	}
	d := decoder{r: cbor.NewReader(data), names: names}
	n := d.array()
	v := d.int()
	if d.err == nil && v != recordVersion && v != recordVersion1 && v != recordVersion3 && v != recordVersion4 {
		return fmt.Errorf("%w: record version %d", ErrVersion, v)
	}
	want := uint64(recordItems)
	switch v {
	case recordVersion3:
		want++
	case recordVersion4:
		want += 2
	}
	if n != want && d.err == nil {
		d.fail("want an array of %d items, have %d", want, n)
	}
	if k := d.bytes(); d.err == nil {
		if len(k) != len(rec.Key) {
			d.fail("key of %d bytes", len(k))
		}
		copy(rec.Key[:], k)
	}
	rec.Status = workunit.Status(d.ranged("status", 0, int64(workunit.StatusError)))
	rec.Seq = d.int()
	if n := d.array(); n != 3 && d.err == nil {
		d.fail("want 3 options, have %d", n)
	}
	rec.Options.NoCache = d.bool()
	rec.Options.GPUs = int(d.ranged("GPU count", 0, math.MaxUint8))
	rec.Options.Timeout = time.Duration(d.ranged("time limit", 0, int64(workunit.MaxTimeout/time.Millisecond))) * time.Millisecond
	rec.Owner = d.name()
	rec.Worker = d.name()
	if ns := d.int(); ns != 0 {
		rec.LastChange = time.Unix(0, ns)
	}
	rec.Deliveries = int(d.ranged("deliveries", 0, math.MaxInt32))
	if n := d.array(); n > 0 && d.err == nil {
		if err := d.r.CheckCount(n, 1); err != nil {
			return err
		}
		rec.LostFrom = make([]string, n)
		for i := range rec.LostFrom {
			rec.LostFrom[i] = d.name()
		}
	}
	rec.Spec = d.bytesOrNull()
	rec.Result = d.bytesOrNull()
	if h := d.head(); d.err == nil && !isNull(h) {
		items := uint64(7)
		if v == recordVersion4 {
			items = 8
		}
		if h.Major != cbor.MajorArray || h.Arg != items {
			d.fail("want null or an error of %d items", items)
		}
		e := &workunit.Error{}
		e.Kind = workunit.ErrorKind(d.ranged("error kind", 0, math.MaxUint8))
		e.Name = d.str()
		e.Message = d.str()
		e.Stack = d.str()
		e.Value = d.bytesOrNull()
		e.Worker = d.str()
		if k := d.bytes(); d.err == nil {
			if len(k) != len(e.Key) {
				d.fail("error key of %d bytes", len(k))
			}
			copy(e.Key[:], k)
		}
		if v == recordVersion4 {
			e.Attempts = d.attempts()
		}
		rec.Err = e
	}
	switch v {
	case recordVersion3:
		rec.Scope = d.name()
		if rec.Scope == "" && d.err == nil {
			d.fail("a version 3 record with an empty scope")
		}
	case recordVersion4:
		rec.Scope = d.name()
		if n := d.array(); n != 3 && d.err == nil {
			d.fail("want [retries, retry-on, attempts], have %d items", n)
		}
		rec.Options.Retries = int(d.ranged("retries", 0, workunit.MaxRetries))
		if n := d.array(); n > 0 && d.err == nil {
			if err := d.r.CheckCount(n, 1); err != nil {
				return err
			}
			rec.Options.RetryOn = make([]string, n)
			for i := range rec.Options.RetryOn {
				rec.Options.RetryOn[i] = d.str()
			}
		}
		rec.Attempts = d.attempts()
	}
	if d.err == nil && d.r.Remaining() != 0 {
		d.fail("%d bytes after the record", d.r.Remaining())
	}
	return d.err
}

// attempts reads a list of attempts, [[worker, name, message]...]; nil
// when empty.
func (d *decoder) attempts() []workunit.Attempt {
	n := d.array()
	if n == 0 || d.err != nil {
		return nil
	}
	if err := d.r.CheckCount(n, 4); err != nil {
		d.err = err
		return nil
	}
	as := make([]workunit.Attempt, n)
	for i := range as {
		if m := d.array(); m != 3 && d.err == nil {
			d.fail("want an attempt of 3 items, have %d", m)
		}
		as[i] = workunit.Attempt{Worker: d.str(), Name: d.str(), Message: d.str()}
	}
	return as
}

// decoder reads items, keeping the first error; after one, reads return
// zero values.
type decoder struct {
	r     *cbor.Reader
	err   error
	names *nameCache // nil: every name a string of its own
}

// nameCache holds the names that decoding many records meets again and
// again, up to maxCachedNames of them.
type nameCache struct{ m map[string]string }

const maxCachedNames = 4096

// name reads a string that is a name (an owner, a worker, a scope): from
// d.names when it has it.
func (d *decoder) name() string {
	b := d.bytes()
	if d.names == nil || d.err != nil {
		return string(b)
	}
	if s, ok := d.names.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.names.m == nil {
		d.names.m = make(map[string]string)
	}
	if len(d.names.m) < maxCachedNames {
		d.names.m[s] = s
	}
	return s
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = d.r.Errorf(format, args...)
	}
}

func (d *decoder) head() cbor.Head {
	if d.err != nil {
		return cbor.Head{}
	}
	h, err := d.r.Next()
	if err != nil {
		d.err = err
	}
	return h
}

func (d *decoder) array() uint64 {
	h := d.head()
	if d.err == nil && h.Major != cbor.MajorArray {
		d.fail("want an array, have major type %d", h.Major)
	}
	return h.Arg
}

func (d *decoder) int() int64 {
	h := d.head()
	switch {
	case d.err != nil:
		return 0
	case h.Major == cbor.MajorUint && h.Arg <= 1<<63-1:
		return int64(h.Arg)
	case h.Major == cbor.MajorNeg && h.Arg <= 1<<63-1:
		return -1 - int64(h.Arg)
	}
	d.fail("want an integer")
	return 0
}

// ranged reads an integer that must lie in [lo, hi]: a stored field
// whose Go type is narrower than CBOR's integers is checked, never
// truncated into another valid value.
func (d *decoder) ranged(what string, lo, hi int64) int64 {
	v := d.int()
	if d.err == nil && (v < lo || v > hi) {
		d.fail("%s %d out of range (%d to %d)", what, v, lo, hi)
	}
	return v
}

func (d *decoder) bool() bool {
	h := d.head()
	if d.err == nil && (h.Major != cbor.MajorSimple || h.IsFloat || h.Arg != cbor.SimpleTrue && h.Arg != cbor.SimpleFalse) {
		d.fail("want a boolean")
	}
	return h.Arg == cbor.SimpleTrue
}

func (d *decoder) bytes() []byte {
	h := d.head()
	if d.err != nil {
		return nil
	}
	if h.Major != cbor.MajorBytes {
		d.fail("want a byte string, have major type %d", h.Major)
		return nil
	}
	b, err := d.r.Bytes(h.Arg)
	if err != nil {
		d.err = err
	}
	return b
}

func (d *decoder) str() string { return string(d.bytes()) }

func isNull(h cbor.Head) bool {
	return h.Major == cbor.MajorSimple && !h.IsFloat && h.Arg == cbor.SimpleNull
}

func (d *decoder) bytesOrNull() []byte {
	h := d.head()
	if d.err != nil {
		return nil
	}
	switch {
	case isNull(h):
		return nil
	case h.Major == cbor.MajorBytes:
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			d.err = err
		}
		if b == nil {
			b = []byte{}
		}
		return b
	}
	d.fail("want bytes or null, have major type %d", h.Major)
	return nil
}
