package engine

import (
	"time"

	"github.com/dop251/goja"
)

// bindPerformance installs performance.now(): milliseconds, with
// sub-millisecond precision, since the runtime was made.
func bindPerformance(rl *realm) error {
	perf := rl.rt.NewObject()
	if err := rl.setFunc(perf, "now", func(goja.FunctionCall) goja.Value {
		return rl.rt.ToValue(float64(time.Since(rl.origin)) / float64(time.Millisecond))
	}); err != nil {
		return err
	}
	return rl.rt.Set("performance", perf)
}
