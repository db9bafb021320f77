package tracker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The dashboard's live updates: GET /api/v1/events is a stream of
// server-sent events. Once a second at most, when something changed, it
// sends an overview event holding the overview document; a comment every
// eventKeepAlive keeps proxies from closing it. Each stream costs the
// loop one look a second, whatever the tracker's rate.
const (
	eventEvery      = time.Second
	eventKeepAlive  = 15 * time.Second
	maxEventStreams = 256
)

func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request, rd reader) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		apiError(w, http.StatusInternalServerError, "riotd: this connection cannot stream events")
		return
	}
	select {
	case s.eventSlots <- struct{}{}:
		defer func() { <-s.eventSlots }()
	default:
		apiError(w, http.StatusServiceUnavailable, "riotd: %d event streams are open, the most riotd serves: close some dashboards, or poll GET /api/v1/overview", maxEventStreams)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	ctx := r.Context()
	tick := time.NewTicker(eventEvery)
	defer tick.Stop()
	keep := time.NewTicker(eventKeepAlive)
	defer keep.Stop()
	var last uint64
	first := true
	for {
		var o Overview
		changed := false
		lctx, cancel := context.WithTimeout(ctx, apiTimeout)
		err := s.do(lctx, func(l *loop) {
			if c := l.changeCount(); first || c != last {
				first, last, changed = false, c, true
				o = l.overview(rd)
			}
		})
		cancel()
		if err != nil {
			return
		}
		if changed {
			data, err := json.Marshal(o)
			if err != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "event: overview\ndata: %s\n\n", data); err != nil {
				return
			}
			flusher.Flush()
		}
		select {
		case <-tick.C:
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-ctx.Done():
			return
		case <-s.quit:
			return
		}
	}
}

// changeCount grows whenever something the dashboard shows changes.
func (l *loop) changeCount() uint64 {
	return l.act.changes + l.completed + l.failed + l.submitted + l.canceled
}
