package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/internal/cli"
	"github.com/riot-go/riot/internal/debugserver"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/replica"
)

// replicaFlags are riotd's flags for running as one replica of several
// (docs/replicas.md).
type replicaFlags struct {
	id, raftListen, peers, secretFile string
	tlsCert, tlsKey, tlsCA            string
	restore                           string
	join                              bool
}

func addReplicaFlags(fs *pflag.FlagSet) *replicaFlags {
	f := &replicaFlags{}
	fs.StringVar(&f.id, "replica-id", "", "run as the replica of this stable `ID`, one of --peers (docs/replicas.md); needs --data (default: a single riotd)")
	fs.StringVar(&f.peers, "peers", "", "with --replica-id: every replica, this one included, as `ID=RAFTHOST:PORT=CLIENTHOST:PORT,...`")
	fs.StringVar(&f.raftListen, "raft-listen", "", "with --replica-id: the `HOST:PORT` the replication port listens on (default: this replica's RAFTHOST:PORT in --peers)")
	fs.StringVar(&f.secretFile, "raft-secret-file", "", "with --replica-id: a `FILE` holding the replicas' shared secret, which authenticates them to each other (needed unless the replication port is on loopback)")
	fs.StringVar(&f.tlsCert, "raft-tls-cert", "", "with --replica-id: this replica's certificate `FILE` (PEM) for the replication port, naming its RAFTHOST; with --raft-tls-key and --raft-tls-ca, the replicas speak TLS to each other")
	fs.StringVar(&f.tlsKey, "raft-tls-key", "", "with --raft-tls-cert: its key `FILE` (PEM)")
	fs.StringVar(&f.tlsCA, "raft-tls-ca", "", "with --raft-tls-cert: the authority `FILE` (PEM) that signed every replica's certificate")
	fs.BoolVar(&f.join, "join", false, "with --replica-id: a new replica of a cluster that serves: wait to be added by its leader (POST /api/v1/replicas, docs/replicas.md) instead of bootstrapping a cluster of --peers")
	fs.StringVar(&f.restore, "raft-restore", "", "with --replica-id: start a new cluster from this backup `FILE` (GET /api/v1/replicas/backup); --data must hold no Raft state yet; give every new replica the same file")
	return f
}

// enabled reports whether riotd runs as a replica.
func (f *replicaFlags) enabled() bool { return f.id != "" }

// config makes the replica's configuration, with the tracker's options.
func (f *replicaFlags) config(opts tracker.Options, dataSet bool) (replica.Config, error) {
	if !dataSet || opts.DataDir == "" {
		return replica.Config{}, errors.New("riotd: --replica-id needs --data DIR, a directory of its own (its Raft log, snapshots and store), not --memory")
	}
	if f.peers == "" {
		return replica.Config{}, errors.New("riotd: --replica-id needs --peers: every replica as ID=RAFTHOST:PORT=CLIENTHOST:PORT,...")
	}
	peers, err := replica.ParsePeers(f.peers)
	if err != nil {
		return replica.Config{}, err
	}
	cfg := replica.Config{ID: f.id, DataDir: opts.DataDir, Peers: peers, RaftListen: f.raftListen, Join: f.join, Restore: f.restore, Tracker: opts}
	if f.secretFile != "" {
		b, err := os.ReadFile(f.secretFile)
		if err != nil {
			return replica.Config{}, fmt.Errorf("riotd: --raft-secret-file: %w", err)
		}
		secret := strings.TrimSpace(string(b))
		if secret == "" {
			return replica.Config{}, fmt.Errorf("riotd: --raft-secret-file %s is empty", f.secretFile)
		}
		cfg.Secret = []byte(secret)
	}
	switch n := btoi(f.tlsCert != "") + btoi(f.tlsKey != "") + btoi(f.tlsCA != ""); n {
	case 0:
	case 3:
		pair, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return replica.Config{}, fmt.Errorf("riotd: --raft-tls-cert, --raft-tls-key: %w", err)
		}
		ca, err := client.TLSConfigWithCA(f.tlsCA)
		if err != nil {
			return replica.Config{}, fmt.Errorf("riotd: --raft-tls-ca: %w", err)
		}
		cfg.RaftTLS = &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: ca.RootCAs, MinVersion: tls.VersionTLS12}
	default:
		return replica.Config{}, errors.New("riotd: --raft-tls-cert, --raft-tls-key and --raft-tls-ca go together: give all three or none")
	}
	return cfg, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// notWithout reports replica flags given without --replica-id.
func (f *replicaFlags) notWithout(fs *pflag.FlagSet) error {
	for _, name := range []string{"peers", "raft-listen", "raft-secret-file", "join", "raft-tls-cert", "raft-tls-key", "raft-tls-ca", "raft-restore"} {
		if fs.Changed(name) {
			return fmt.Errorf("riotd: --%s needs --replica-id", name)
		}
	}
	return nil
}

// runReplica runs riotd as a replica until ctx ends.
func runReplica(ctx context.Context, f *replicaFlags, opts tracker.Options, dataSet bool, debugListen string) error {
	cfg, err := f.config(opts, dataSet)
	if err != nil {
		return cli.Usage(err)
	}
	// The store opens whole even if a signal came meanwhile; Run then stops.
	rp, err := replica.New(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return cli.Fail(err)
	}
	if debugListen != "" {
		ds, err := debugserver.Start(debugListen, rp.Logger())
		if err != nil {
			return cli.Usage(err)
		}
		defer ds.Close(context.WithoutCancel(ctx))
	}
	if err := rp.Run(ctx); err != nil {
		return cli.Fail(err)
	}
	return nil
}
