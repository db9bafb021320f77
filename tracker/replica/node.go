package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// A replica's data directory holds:
//
//	raft/raft.db       raft's log and its term and vote (raft-boltdb: bbolt, synced)
//	raft/snapshots/    raft's snapshots of the local store (the last two)
//	state/             the local store (store.Bolt, not synced), rebuilt at each start
const (
	raftDirName  = "raft"
	raftDBName   = "raft.db"
	snapDirName  = "snapshots"
	stateDirName = "state"
	// snapshotsKept is how many snapshots raft keeps on disk.
	snapshotsKept = 2
	// maxAppendEntries is raft's MaxAppendEntries (see openNode).
	maxAppendEntries = 8
	// logCacheEntries is how many recent log entries stay in memory.
	logCacheEntries = 512
	// lockWait bounds the wait for raft.db's file lock (another riotd on
	// the same --data).
	lockWait = 10 * time.Second
)

// Timing are raft's timeouts and its snapshot policy; zero fields take
// hashicorp/raft's defaults (raft.DefaultConfig: heartbeat and election
// timeouts of 1 s, leader lease 500 ms, a snapshot every 120 s when 8192
// entries were applied since the last, 10240 entries kept behind it).
type Timing struct {
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64
}

func (t Timing) apply(c *raft.Config) {
	if t.HeartbeatTimeout > 0 {
		c.HeartbeatTimeout = t.HeartbeatTimeout
	}
	if t.ElectionTimeout > 0 {
		c.ElectionTimeout = t.ElectionTimeout
	}
	if t.LeaderLeaseTimeout > 0 {
		c.LeaderLeaseTimeout = t.LeaderLeaseTimeout
	}
	if t.CommitTimeout > 0 {
		c.CommitTimeout = t.CommitTimeout
	}
	if t.SnapshotInterval > 0 {
		c.SnapshotInterval = t.SnapshotInterval
	}
	if t.SnapshotThreshold > 0 {
		c.SnapshotThreshold = t.SnapshotThreshold
	}
	if t.TrailingLogs > 0 {
		c.TrailingLogs = t.TrailingLogs
	}
}

// node is one replica's Raft: its FSM and local store, its log and stable
// store, its snapshots, and its transport.
type node struct {
	id     raft.ServerID
	raft   *raft.Raft
	fsm    *fsm
	logs   *raftboltdb.BoltStore
	trans  raft.Transport
	snaps  raft.SnapshotStore
	notify chan bool // raft's leadership changes (Config.NotifyCh)
}

// nodeConfig is what openNode needs.
type nodeConfig struct {
	id        raft.ServerID
	dir       string // the replica's data directory
	trans     raft.Transport
	log       *slog.Logger
	timing    Timing
	bootstrap []raft.Server // the first configuration, for a new replica; nil: join one
	restore   string        // a backup to start a new cluster from (see restoreBackup); "": none
	fatal     func(error)
	// wrapLogs, when not nil, wraps raft's log store (for tests).
	wrapLogs func(raft.LogStore) raft.LogStore
}

// openNode opens (or creates) the replica's Raft in nc.dir: raft restores
// the last snapshot into the FSM's empty local store and applies the log
// after it as it learns it is committed.
func openNode(ctx context.Context, nc nodeConfig) (*node, error) {
	raftDir := filepath.Join(nc.dir, raftDirName)
	if err := os.MkdirAll(raftDir, 0o700); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	f, err := openFSM(ctx, filepath.Join(nc.dir, stateDirName), nc.log, nc.fatal)
	if err != nil {
		return nil, err
	}
	logs, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(raftDir, raftDBName),
		// As Consul's raft_logstore.boltdb.no_freelist_sync: the log is
		// written at its end and deleted at its start after each snapshot,
		// so bbolt's free list grows, and writing it at every commit
		// costs more than rebuilding it at open.
		BoltOptions: &bbolt.Options{Timeout: lockWait, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("replica: raft log %s: %w", filepath.Join(raftDir, raftDBName), err)
	}
	hl := newHCLogger(nc.log, "raft")
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(raftDir, snapDirName), snapshotsKept, hl)
	if err != nil {
		logs.Close()
		f.close()
		return nil, fmt.Errorf("replica: raft snapshots: %w", err)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = nc.id
	conf.Logger = hl
	// An append RPC carries at most this many entries (raft's default is
	// 64): entries can be blobs of a megabyte or more, and a follower
	// must take a whole RPC within the transport's timeout.
	conf.MaxAppendEntries = maxAppendEntries
	nc.timing.apply(conf)
	n := &node{id: nc.id, fsm: f, logs: logs, trans: nc.trans, snaps: snaps, notify: make(chan bool, 64)}
	conf.NotifyCh = n.notify
	if nc.restore != "" {
		if err := restoreBackup(nc.restore, raftDir, logs, logs, snaps, nc.trans, nc.bootstrap, nc.log); err != nil {
			logs.Close()
			f.close()
			return nil, err
		}
	} else if nc.bootstrap != nil {
		has, err := raft.HasExistingState(logs, logs, snaps)
		if err != nil {
			logs.Close()
			f.close()
			return nil, fmt.Errorf("replica: raft state: %w", err)
		}
		if !has {
			// A restore that stopped before its snapshot named its
			// backup (see restoreBackup); this state is not from it.
			if err := os.Remove(filepath.Join(raftDir, restoredName)); err != nil && !errors.Is(err, os.ErrNotExist) {
				logs.Close()
				f.close()
				return nil, fmt.Errorf("replica: %w", err)
			}
			if err := raft.BootstrapCluster(conf, logs, logs, snaps, nc.trans, raft.Configuration{Servers: nc.bootstrap}); err != nil {
				logs.Close()
				f.close()
				return nil, fmt.Errorf("replica: bootstrap: %w", err)
			}
		}
	}
	// The leader reads back the entries it sends to followers: keep the
	// recent ones decoded in memory, as Consul and Nomad do (within a
	// bound of bytes: see logCache).
	var logStore raft.LogStore = newLogCache(logCacheEntries, logCacheBytes, logs)
	if nc.wrapLogs != nil {
		logStore = nc.wrapLogs(logStore)
	}
	r, err := raft.NewRaft(conf, f, logStore, logs, snaps, nc.trans)
	if err != nil {
		logs.Close()
		f.close()
		return nil, fmt.Errorf("replica: raft: %w", err)
	}
	n.raft = r
	return n, nil
}

// close stops raft and closes the stores and the transport.
func (n *node) close() error {
	var errs []error
	if err := n.raft.Shutdown().Error(); err != nil {
		errs = append(errs, fmt.Errorf("replica: raft shutdown: %w", err))
	}
	if c, ok := n.trans.(raft.WithClose); ok {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("replica: transport: %w", err))
		}
	}
	if err := n.logs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("replica: raft log: %w", err))
	}
	if err := n.fsm.close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
