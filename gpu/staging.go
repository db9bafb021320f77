package gpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Staging defaults: copies go through up to stagingBuffers page-locked
// buffers of stagingChunk bytes per Resources (16 MiB), and the copy
// between Go memory and a buffer is split among up to stagingCopiers
// goroutines, since one core's memmove is slower than the link.
const (
	defaultStagingChunk   = 4 << 20
	defaultStagingBuffers = 4
	stagingCopiers        = 8
	minCopierBytes        = 512 << 10 // a goroutine copies at least this much: 8 a chunk
)

// Wait phases of Sync and of staged copies: queries back to back for
// waitSpin, then with a yield of the processor between them until
// waitYield, then on a timer from waitFirstSleep doubling to waitMaxSleep.
// Each query is a driver call on the caller's thread (see direct), well
// under a microsecond, so an idle stream answers at once.
const (
	waitSpin       = 20 * time.Microsecond
	waitYield      = 200 * time.Microsecond
	waitFirstSleep = 50 * time.Microsecond
	waitMaxSleep   = time.Millisecond
)

// WithPinnedStaging sets how host↔device copies are staged: through up to
// maxBytes of page-locked host memory per Resources, in buffers of
// chunkBytes, so that the copy between Go memory and one buffer overlaps
// the DMA of another. maxBytes 0 turns staging off: copies then go from
// and to Go memory directly (pageable), as the driver stages them itself,
// at about a third of the speed. chunkBytes below 64 KiB is raised to it;
// maxBytes below one chunk means one buffer. The default is 4 buffers of
// 4 MiB.
func WithPinnedStaging(chunkBytes, maxBytes int) Option {
	return func(c *config) {
		if maxBytes <= 0 {
			c.stageChunk, c.stageBuffers = 0, 0
			return
		}
		c.stageChunk = max(chunkBytes, 64<<10)
		c.stageBuffers = max(maxBytes/c.stageChunk, 1)
	}
}

// idleStagingBuffers is how many staging buffers of closed resources a
// device keeps for its next ones: two resources' worth.
func (c *config) idleStagingBuffers() int { return 2 * c.stageBuffers }

// stagingBuf is one page-locked host buffer and the event recorded on a
// stream after the last copy from or to it: the buffer may be written (or
// read) again once the event is done.
type stagingBuf struct {
	host  unsafe.Pointer // from cuMemHostAlloc
	size  int
	event uintptr // CUevent, made with CU_EVENT_DISABLE_TIMING
	busy  bool    // an event was recorded and not yet seen done
}

func (b *stagingBuf) bytes() []byte { return unsafe.Slice((*byte)(b.host), b.size) }

// staging is the page-locked buffers of one Resources. mu is held by one
// staged copy at a time (they run in order on the stream anyway); the
// fields below it are guarded by the resources' mu, so that Close can take
// the buffers when no copy holds them, and a copy that finds the resources
// closed at its end gives them back to the device itself.
type staging struct {
	mu     sync.Mutex
	bufs   []*stagingBuf
	active bool
}

// StagingBuffers returns the number and total size of the page-locked
// staging buffers the resources hold now.
func (r *Resources) StagingBuffers() (n int, bytes int) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.stage.bufs {
		bytes += b.size
	}
	return len(s.stage.bufs), bytes
}

// staged reports whether copies of n bytes go through staging buffers.
func (s *resState) staged(n uintptr) bool {
	return s.drv.cfg.stageBuffers > 0 && n > 0
}

// direct runs fn on the caller's OS thread with the device's primary
// context made current there, after checking that the resources are open.
// It is for the calls that sit in the hot path of copies and waits
// (cuMemcpy*Async, cuEventRecord, cuEventQuery, cuStreamQuery): a round
// trip through the device thread costs tens of microseconds, these calls
// well under one. The driver is thread-safe, and the resources' primary
// context reference keeps the context alive while they are open; s.use,
// held shared here, keeps Close from destroying the stream or freeing an
// array under the call. fn must not wait for the device thread.
func (s *resState) direct(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s.use.RLock()
	defer s.use.RUnlock()
	if s.isClosed() {
		return errResourcesClosed
	}
	api := s.drv.api
	if err := api.check("cuCtxSetCurrent", api.cuCtxSetCurrent(s.dev.ctx)); err != nil {
		return err
	}
	return fn()
}

// wait polls query (cuStreamQuery or cuEventQuery, the C function fn)
// until it answers CUDA_SUCCESS, through the phases of waitSpin, waitYield
// and the timer. ctx ends the wait, between two queries, with an error
// that wraps ctx.Err() and names what was waited for; the work goes on.
func (s *resState) wait(ctx context.Context, fn, what string, query func() cuResult) error {
	api := s.drv.api
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	start := time.Now()
	sleep := waitFirstSleep
	for {
		var r cuResult
		if err := s.direct(func() error {
			r = query()
			return nil
		}); err != nil {
			return err
		}
		switch r {
		case cudaSuccess:
			return nil
		case cudaErrorNotReady:
		default:
			return api.check(fn, r)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s on device %d still busy: %w", what, s.info.Ordinal, ctx.Err())
		}
		switch since := time.Since(start); {
		case since < waitSpin:
		case since < waitYield:
			runtime.Gosched()
		default:
			if timer == nil {
				timer = time.NewTimer(sleep)
			} else {
				timer.Reset(sleep)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s on device %d still busy: %w", what, s.info.Ordinal, ctx.Err())
			case <-timer.C:
			}
			sleep = min(2*sleep, waitMaxSleep)
		}
	}
}

// acquireStaging takes the resources' staging buffers for one copy; the
// release function it returns gives them back (to the device, when the
// resources closed meanwhile).
func (s *resState) acquireStaging() func() {
	s.stage.mu.Lock()
	s.mu.Lock()
	s.stage.active = true
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.stage.active = false
		var orphans []*stagingBuf
		if s.closed {
			orphans, s.stage.bufs = s.stage.bufs, nil
		}
		s.mu.Unlock()
		if orphans != nil {
			s.dev.putIdleBufs(orphans, s.drv.cfg.idleStagingBuffers())
		}
		s.stage.mu.Unlock()
	}
}

// buffer returns staging buffer i, made on first use (or taken from the
// device's idle buffers), once the copy it last served is done. The caller
// holds stage.mu.
func (s *resState) buffer(ctx context.Context, i int) (*stagingBuf, error) {
	s.mu.Lock()
	var b *stagingBuf
	if i < len(s.stage.bufs) {
		b = s.stage.bufs[i]
	}
	s.mu.Unlock()
	if b == nil {
		var err error
		if b = s.dev.takeIdleBuf(s.drv.cfg.stageChunk); b == nil {
			if b, err = s.newBuffer(ctx); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		s.stage.bufs = append(s.stage.bufs, b)
		s.mu.Unlock()
	}
	if b.busy {
		api := s.drv.api
		if err := s.wait(ctx, "cuEventQuery", "staging buffer's copy", func() cuResult { return api.cuEventQuery(b.event) }); err != nil {
			return nil, err
		}
		b.busy = false
	}
	return b, nil
}

// newBuffer allocates a page-locked buffer and its event.
func (s *resState) newBuffer(ctx context.Context) (*stagingBuf, error) {
	api := s.drv.api
	b := &stagingBuf{size: s.drv.cfg.stageChunk}
	err := s.onThread(ctx, func() error {
		if err := api.check("cuMemHostAlloc", api.cuMemHostAlloc(&b.host, uintptr(b.size), 0)); err != nil {
			b.host = nil
			return fmt.Errorf("allocating %d bytes of page-locked host memory: %w", b.size, err)
		}
		if err := api.check("cuEventCreate", api.cuEventCreate(&b.event, eventDisableTiming)); err != nil {
			_ = api.cuMemFreeHost(b.host)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// copyIn copies src to the device memory at dst through the staging
// buffers: each chunk is copied into a buffer (by several goroutines) and
// queued with cuMemcpyHtoDAsync, and an event recorded after it tells when
// the buffer is free again; so the copy into one buffer overlaps the DMA
// from the others. It returns once the last chunk is queued: src may be
// reused at once.
func (s *resState) copyIn(ctx context.Context, a *arrState, src []byte) error {
	release := s.acquireStaging()
	defer release()
	api := s.drv.api
	chunk := s.drv.cfg.stageChunk
	nbuf := min(s.drv.cfg.stageBuffers, (len(src)+chunk-1)/chunk)
	for i, off := 0, 0; off < len(src); i, off = i+1, off+chunk {
		m := min(chunk, len(src)-off)
		b, err := s.buffer(ctx, i%nbuf)
		if err != nil {
			return err
		}
		parallelCopy(b.bytes()[:m], src[off:off+m])
		if err := s.direct(func() error {
			dst, err := s.livePtr(a)
			if err != nil {
				return err
			}
			if err := api.check("cuMemcpyHtoDAsync_v2", api.cuMemcpyHtoDAsync(dst+uint64(off), b.host, uintptr(m), s.stream)); err != nil {
				return err
			}
			b.busy = true
			return api.check("cuEventRecord", api.cuEventRecord(b.event, s.stream))
		}); err != nil {
			return err
		}
		if hook := s.drv.cfg.chunkHook; hook != nil {
			hook()
		}
	}
	return nil
}

// copyOut copies the device memory at src into dst through the staging
// buffers: up to one chunk per buffer is queued with cuMemcpyDtoHAsync
// ahead, and each buffer, once its event is done, is copied out (by
// several goroutines) and queued again for a later chunk. The first wait
// is also the wait for the stream's earlier work, which the copies follow.
func (s *resState) copyOut(ctx context.Context, dst []byte, a *arrState) error {
	release := s.acquireStaging()
	defer release()
	api := s.drv.api
	chunk := s.drv.cfg.stageChunk
	chunks := (len(dst) + chunk - 1) / chunk
	nbuf := min(s.drv.cfg.stageBuffers, chunks)
	queue := func(i int) error {
		off := i * chunk
		m := min(chunk, len(dst)-off)
		b, err := s.buffer(ctx, i%nbuf)
		if err != nil {
			return err
		}
		return s.direct(func() error {
			src, err := s.livePtr(a)
			if err != nil {
				return err
			}
			if err := api.check("cuMemcpyDtoHAsync_v2", api.cuMemcpyDtoHAsync(b.host, src+uint64(off), uintptr(m), s.stream)); err != nil {
				return err
			}
			b.busy = true
			return api.check("cuEventRecord", api.cuEventRecord(b.event, s.stream))
		})
	}
	for i := range nbuf {
		if err := queue(i); err != nil {
			return err
		}
	}
	for i := range chunks {
		off := i * chunk
		m := min(chunk, len(dst)-off)
		b, err := s.buffer(ctx, i%nbuf) // waits for its copy
		if err != nil {
			return err
		}
		parallelCopy(dst[off:off+m], b.bytes()[:m])
		if hook := s.drv.cfg.chunkHook; hook != nil {
			hook()
		}
		if i+nbuf < chunks {
			if err := queue(i + nbuf); err != nil {
				return err
			}
		}
	}
	return nil
}

// livePtr returns a's device pointer, or errArrayFreed. Under direct, a
// cannot be freed before the call that uses the pointer returns.
func (s *resState) livePtr(a *arrState) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.freed {
		return 0, errArrayFreed
	}
	return a.ptr, nil
}

// parallelCopy copies src into dst, splitting large copies among up to
// stagingCopiers goroutines.
func parallelCopy(dst, src []byte) {
	n := min(stagingCopiers, runtime.GOMAXPROCS(0), len(src)/minCopierBytes)
	if n <= 1 {
		copy(dst, src)
		return
	}
	part := (len(src) + n - 1) / n
	var wg sync.WaitGroup
	for lo := 0; lo < len(src); lo += part {
		hi := min(lo+part, len(src))
		wg.Go(func() { copy(dst[lo:hi], src[lo:hi]) })
	}
	wg.Wait()
}

// releaseStaging takes the resources' staging buffers when no copy holds
// them, for Close; a copy in progress gives them back itself. It runs on
// the device thread with s.mu held.
func (s *resState) releaseStagingLocked() []*stagingBuf {
	if s.stage.active {
		return nil
	}
	bufs := s.stage.bufs
	s.stage.bufs = nil
	return bufs
}

// The device keeps the staging buffers of closed resources for its next
// resources, since cuMemHostAlloc is slow (it maps and locks the pages)
// and cuMemFreeHost may synchronize the device. At most keep buffers are
// kept, beyond those still busy; the rest are freed. The buffers are freed
// when the device thread stops.

// putIdleBufs keeps bufs for later resources, freeing those over the
// bound whose copies are done. It runs on any goroutine but the device
// thread, whose own callers use putIdleBufsOnThread.
func (d *device) putIdleBufs(bufs []*stagingBuf, keep int) {
	extra := d.keepIdle(bufs, keep)
	if len(extra) == 0 {
		return
	}
	if err := d.do(context.Background(), func() error {
		d.freeDone(extra, keep)
		return nil
	}); err != nil {
		d.bufMu.Lock() // the thread stopped: release frees them
		d.idleBufs = append(d.idleBufs, extra...)
		d.bufMu.Unlock()
	}
}

// putIdleBufsOnThread is putIdleBufs on the device thread.
func (d *device) putIdleBufsOnThread(bufs []*stagingBuf, keep int) {
	if extra := d.keepIdle(bufs, keep); len(extra) > 0 {
		d.freeDone(extra, keep)
	}
}

// keepIdle adds bufs to the idle buffers and returns those over keep.
func (d *device) keepIdle(bufs []*stagingBuf, keep int) []*stagingBuf {
	d.bufMu.Lock()
	defer d.bufMu.Unlock()
	d.idleBufs = append(d.idleBufs, bufs...)
	if len(d.idleBufs) <= keep {
		return nil
	}
	extra := d.idleBufs[keep:]
	d.idleBufs = d.idleBufs[:keep:keep]
	return extra
}

// freeDone frees the buffers of extra whose copies are done and keeps the
// others idle (beyond the bound: a buffer under a DMA cannot be freed). It
// runs on the device thread.
func (d *device) freeDone(extra []*stagingBuf, keep int) {
	var busy []*stagingBuf
	for _, b := range extra {
		if b.busy && d.api.cuEventQuery(b.event) == cudaErrorNotReady {
			busy = append(busy, b)
			continue
		}
		_ = d.freeBuf(b) // nothing to tell a caller: the buffer is gone either way
	}
	if len(busy) > 0 {
		d.bufMu.Lock()
		d.idleBufs = append(d.idleBufs, busy...)
		d.bufMu.Unlock()
	}
}

// takeIdleBuf returns an idle buffer of size bytes, or nil.
func (d *device) takeIdleBuf(size int) *stagingBuf {
	d.bufMu.Lock()
	defer d.bufMu.Unlock()
	for i := len(d.idleBufs) - 1; i >= 0; i-- {
		if b := d.idleBufs[i]; b.size == size {
			d.idleBufs = append(d.idleBufs[:i], d.idleBufs[i+1:]...)
			return b
		}
	}
	return nil
}

// freeBuf frees a buffer and its event. It runs on the device thread.
func (d *device) freeBuf(b *stagingBuf) error {
	return errors.Join(
		d.api.check("cuEventDestroy_v2", d.api.cuEventDestroy(b.event)),
		d.api.check("cuMemFreeHost", d.api.cuMemFreeHost(b.host)))
}
