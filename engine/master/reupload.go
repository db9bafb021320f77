package master

import (
	"context"
	"errors"
	"sync"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/workunit"
)

// UploadingConn is a Conn whose submissions upload their blobs again by
// themselves: package job's adapter of the Go client is one. The master
// submits a spec that names blobs with SubmitUploading when its Conn is
// one, and with Submit otherwise (then it uploads again and submits again
// itself when the tracker refuses the submission: accept).
type UploadingConn interface {
	Conn
	// SubmitUploading is Submit with upload, which the connection calls
	// on a goroutine of its own, with the spec's blobs, when the tracker
	// answers the submission, or its resubmission after a reconnect, that
	// it does not hold one of them (unknown-blob: a riotd --memory frees
	// a blob once nothing names it, and loses every blob when it
	// restarts); once upload returns nil it submits again, and an error
	// from upload fails the submission (client.Client.SubmitUploading).
	SubmitUploading(spec *workunit.Spec, opts workunit.Options, upload func(ctx context.Context, blobs []blob.Hash) error) Submission
}

// errUploadAgain ends a wait of the script's goroutine for the tracker
// (waitContext) so that it serves a request to upload blobs again.
var errUploadAgain = errors.New("master: a connection asks to upload blobs again")

// reupQueue holds the requests of connections' goroutines to upload blobs
// again, which only the script's goroutine can serve: a value whose
// encoding the master dropped is encoded again from the script's value,
// and the runtime is not safe for concurrent use. The script's goroutine
// serves them in its event loop (ready) and in its waits for the tracker,
// whose context a request ends (waitContext): a wait may be for the very
// submission that needs the upload.
type reupQueue struct {
	mu    sync.Mutex
	reqs  []*reupload
	ready chan struct{} // has a value when reqs may be non-empty
	// wait is the context of the script goroutine's waits, ended (with
	// errUploadAgain) by the next request; cancel ends it.
	wait   context.Context
	cancel context.CancelCauseFunc
}

// reupload is one request: upload the blobs hashes again through c.
type reupload struct {
	op     string
	c      Conn
	hashes []blob.Hash
	done   chan error // gets the outcome; buffered
}

func (q *reupQueue) push(r *reupload) {
	q.mu.Lock()
	q.reqs = append(q.reqs, r)
	if q.cancel != nil {
		q.cancel(errUploadAgain)
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *reupQueue) take() []*reupload {
	q.mu.Lock()
	defer q.mu.Unlock()
	reqs := q.reqs
	q.reqs = nil
	return reqs
}

// uploader returns the function that submissions made through c (by the
// call op) upload their blobs again with (UploadingConn): it asks the
// script's goroutine to and waits until it did, or the script ended.
func (m *master) uploader(op string, c Conn) func(context.Context, []blob.Hash) error {
	return func(ctx context.Context, hashes []blob.Hash) error {
		r := &reupload{op: op, c: c, hashes: hashes, done: make(chan error, 1)}
		m.reups.push(r)
		select {
		case err := <-r.done:
			return err
		case <-m.ctx.Done():
			return context.Cause(m.ctx)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitContext returns the context for a wait of the script's goroutine
// for the tracker: m.ctx's, ended too by a request to upload blobs again
// (at once when one is pending). After a wait that ended with an error,
// check interrupted.
func (m *master) waitContext() context.Context {
	q := &m.reups
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.wait == nil || q.wait.Err() != nil {
		q.wait, q.cancel = context.WithCancelCause(m.ctx)
	}
	if len(q.reqs) > 0 {
		q.cancel(errUploadAgain)
	}
	return q.wait
}

// interrupted reports whether a wait with ctx (waitContext) that returned
// err ended for a request to upload blobs again, which it then serves:
// the caller waits again.
func (m *master) interrupted(ctx context.Context, err error) bool {
	if err == nil || m.ctx.Err() != nil || !errors.Is(context.Cause(ctx), errUploadAgain) {
		return false
	}
	m.serveUploads()
	return true
}

// serveUploads serves the requests to upload blobs again, on the script's
// goroutine: it forgets that it uploaded the blobs through the request's
// connection, and uploads them, as submit does (their bytes from
// blobBytes, which encodes a value again when its encoding was dropped).
// What that throws (a value changed since it was sent, the tracker's
// memory full) is the request's error, which fails the submission.
func (m *master) serveUploads() {
	for _, r := range m.reups.take() {
		var err error
		if ex := m.rt.Try(func() {
			up := m.uploaded[r.c]
			if up == nil {
				up = make(map[blob.Hash]bool)
				m.uploaded[r.c] = up
			}
			need := make(map[blob.Hash]blob.Parts, len(r.hashes))
			for _, h := range r.hashes {
				if _, ok := need[h]; !ok {
					delete(up, h)
					need[h] = m.blobBytes(r.op, h)
				}
			}
			m.opts.Logger.Info("master: the tracker does not hold blobs that a workunit names; uploading them again", "op", r.op, "blobs", len(need))
			m.upload(r.op, r.c, up, need)
		}); ex != nil {
			err = errors.New(errorText(ex.Value()))
		}
		r.done <- err
	}
}

// errorText is what a thrown value says: an Error's name and message.
func errorText(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		name, msg := inspect.SafeString(o.Get("name")), inspect.SafeString(o.Get("message"))
		if msg != "" {
			return name + ": " + msg
		}
	}
	return inspect.SafeString(v)
}
