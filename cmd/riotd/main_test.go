package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRun(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		args []string
		ctx  context.Context
		code int
		out  string
	}{
		{name: "help", args: []string{"--help"}, code: 0, out: "riotd [--port 2355]"},
		{name: "bad flag", args: []string{"--bogus"}, code: 2, out: "bogus"},
		{name: "argument", args: []string{"localhost"}, code: 2, out: "unexpected argument"},
		{name: "cannot listen", args: []string{"--memory", "--listen", "256.0.0.1:0"}, code: 1, out: "listen"},
		// Starts, serves, and stops cleanly when the context ends.
		{name: "start and stop", args: []string{"--memory", "--listen", "127.0.0.1:0", "--log-level", "warn"}, ctx: canceled, code: 0},
		{name: "start and stop with data", args: []string{"--data", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "warn"},
			ctx: canceled, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var stderr bytes.Buffer
			assert.Equal(t, tt.code, run(ctx, tt.args, &stderr), stderr.String())
			assert.Contains(t, stderr.String(), tt.out)
		})
	}
}
