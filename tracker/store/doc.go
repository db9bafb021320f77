// Package store is the tracker's durable store: workunit records, for the
// table to restart from, and content-addressed blobs (code and large
// values).
//
// Store is the interface the tracker's shell consumes. Two
// implementations:
//
//   - Bolt, one bbolt file (FileName) in a data directory, with a
//     write-ahead log beside it: an Apply appends its batch to the log and
//     syncs it (one fdatasync), and a checkpointer applies the log to the
//     bbolt file in the background, many batches in one transaction (see
//     The log, below);
//   - Memory, for a tracker without a data directory, and for tests.
//
// A Bolt opened with BoltOptions.Deferred is for a copy that is rebuilt
// from elsewhere after a crash (a replica's local store): no syncs and no
// log; Apply's records wait in memory and go to the bbolt file many
// batches in one transaction (see deferred.go), and ApplyEncoded takes a
// batch as EncodeBatch wrote it.
//
// There is no group commit here: the tracker's loop has at most one
// Apply in flight, and every submission that arrives meanwhile goes into
// the next one, so each sync is shared already (see package tracker).
//
// # Usage
//
//	s, err := store.OpenBolt(ctx, dataDir, store.BoltOptions{})
//	defer s.Close()
//	recs, err := s.Load(ctx)
//	err = tab.Restore(recs)
//	...
//	rd := tab.Ready()
//	if err := s.Apply(ctx, rd.Persist); err != nil {
//		// refuse rd's acks, tab.PersistFailed(rd)
//	}
//
// # The caller's duties
//
//  1. Acknowledge nothing whose records Apply has not returned nil for.
//     An Apply error means none of the batch was written: refuse the
//     submissions that depended on it (the table writes the records again
//     in its next Ready).
//  2. Give Apply records with IDs (the table does), and do not modify
//     their byte slices afterwards.
//  3. Close the store on shutdown; a second process cannot open the same
//     file while it is open.
//
// # Format
//
// The bbolt file has buckets "meta" (format name and version), "records"
// (record ID → encoded record, spec included while waiting or running)
// and "blobs" (hash → bytes, for blobs stored whole). Blobs that came in
// pieces (CreateBlob) are files of the directory BlobDir beside it, named
// by their hash in hex. Records are versioned CBOR arrays (see
// codec.go) with a checksum each; a file or record of a newer version
// fails with ErrVersion, a damaged or foreign file with ErrCorrupt: at
// open (checkFile reads the meta pages and every page of the trees before
// bbolt trusts them), at Load (every record is decoded and its checksum
// checked), or when a blob is read (its bytes must have its hash). A file
// older than the last commit (TxidFileName) fails with ErrRolledBack.
//
// # The log
//
// A bbolt commit syncs twice (its pages, then its meta page) and writes
// every page of the tree it touched; an Apply of one small record cost
// about 380 µs that way. So Apply writes its batch as one entry of a log
// file, FileName + ".wal." + a number, and syncs that file alone (about
// 110 µs). The checkpointer, every 100 ms or after 8192 records, starts
// the next log file, applies the entries of the earlier ones to the bbolt
// file in one transaction that also notes the last entry applied (meta
// key "walseq"), and then removes those files. Load and Result of a record
// the log holds run a checkpoint first (a read-only store reads them from
// memory), so the log is read only at open, where
// the entries past "walseq" are applied before the store serves; Close
// checkpoints what is left and removes the log. An entry carries its
// length, a CRC-32C and a sequence number: one cut short or failing its
// checksum at the end of a file, or zero bytes there (a crash during its
// write, never acknowledged), is dropped with a warning; a file whose first
// number repeats the last file's replaces those entries (a write or sync
// failed there, and the next Apply wrote them again in a new file); any
// other damage, or a gap in the numbers (a log file lost, or a bbolt file
// older than its log), fails the open with ErrCorrupt.
// BoltOptions.DirectCommits writes each Apply as a bbolt transaction
// instead, as before the log (for benchmarks and tests); a log left in
// the directory is applied at open either way.
package store
