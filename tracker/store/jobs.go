package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Job is what the tracker keeps of a job (a master's session) for its
// status pages, so that they survive a restart: its name and identity,
// when it started and ended, and its counts that the workunit records do
// not hold. Realm is its key (table.Record.Owner of its workunits).
type Job struct {
	Realm      string    `json:"realm"`
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Master     string    `json:"master"`
	Credential string    `json:"credential,omitempty"`
	Started    time.Time `json:"started"`
	// Ended is zero for a job whose master was connected when it was
	// written.
	Ended      time.Time `json:"ended,omitzero"`
	Submitted  uint64    `json:"submitted"`
	FromMemory uint64    `json:"from_memory"`
}

// JobStore is a Store that keeps jobs too. Jobs are written rarely (when
// one starts or ends) and are for status pages only: nothing depends on
// them.
type JobStore interface {
	// PutJobs writes jobs (replacing those of the same Realm) and deletes
	// those whose realms forget lists, durably, in one transaction.
	PutJobs(ctx context.Context, jobs []Job, forget []string) error
	// LoadJobs returns the stored jobs, in no particular order.
	LoadJobs(ctx context.Context) ([]Job, error)
}

var (
	_ JobStore = (*Bolt)(nil)
	_ JobStore = (*Memory)(nil)
)

// bucketJobs holds the jobs by realm, as JSON. Stores written before it
// existed lack it: it is made by the first PutJobs.
var bucketJobs = []byte("jobs")

// PutJobs implements JobStore.
func (s *Bolt) PutJobs(ctx context.Context, jobs []Job, forget []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: put jobs: %w", err)
	}
	if len(jobs) == 0 && len(forget) == 0 {
		return nil
	}
	err := s.use("put jobs", func(db *bolt.DB) error {
		return s.update(db, func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucketJobs)
			if err != nil {
				return err
			}
			for _, realm := range forget {
				if err := b.Delete([]byte(realm)); err != nil {
					return err
				}
			}
			for i := range jobs {
				data, err := json.Marshal(&jobs[i])
				if err != nil {
					return err
				}
				if err := b.Put([]byte(jobs[i].Realm), data); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrCorrupt) {
			return err
		}
		return writeErr("put jobs", err)
	}
	return nil
}

// LoadJobs implements JobStore. A job that does not decode is skipped:
// jobs are for status pages, and one damaged entry must not keep the
// tracker from starting.
func (s *Bolt) LoadJobs(ctx context.Context) ([]Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load jobs: %w", err)
	}
	var out []Job
	err := s.use("load jobs", func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketJobs)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				var j Job
				if json.Unmarshal(v, &j) == nil && j.Realm == string(k) {
					out = append(out, j)
				}
				return nil
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: load jobs from %s: %w", s.path, err)
	}
	return out, nil
}

// PutJobs implements JobStore.
func (m *Memory) PutJobs(ctx context.Context, jobs []Job, forget []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: put jobs: %w", err)
	}
	if err := m.lock("put jobs"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.jobs == nil {
		m.jobs = map[string]Job{}
	}
	for _, realm := range forget {
		delete(m.jobs, realm)
	}
	for _, j := range jobs {
		m.jobs[j.Realm] = j
	}
	return nil
}

// LoadJobs implements JobStore.
func (m *Memory) LoadJobs(ctx context.Context) ([]Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load jobs: %w", err)
	}
	if err := m.lock("load jobs"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		out = append(out, j)
	}
	return out, nil
}
