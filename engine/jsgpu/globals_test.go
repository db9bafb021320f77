package jsgpu

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
)

// gpuGlobals are the names the GPU bindings add to the global object, in
// the order they add them (docs/gpu.md).
var gpuGlobals = []string{
	"RaftError", "DeviceResources", "DeviceArray", "DeviceKernel",
	"deviceCount", "deviceInfo", "deviceResources", "resourcesDevice", "currentDeviceResources",
	"resourcesSync", "resourcesRelease", "withDeviceResources", "deviceArray", "deviceZeros",
	"arrayToHost", "arrayFromHost", "arrayFree", "matMul", "gemm", "compileKernel", "launchKernel",
}

func globalNames(t *testing.T, opts engine.Options) (own, enumerable string) {
	t.Helper()
	e, err := engine.New(opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	res, err := e.Eval(context.Background(), "[Object.getOwnPropertyNames(globalThis).join(), Object.keys(globalThis).join()]")
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	list := v.([]any)
	return list[0].(string), list[1].(string)
}

// A worker's sandbox (riot's globals, then the GPU bindings, with or
// without a driver) has the engine's globals and the GPU names after
// them, in one order in every fresh sandbox: a workunit's result must not
// depend on which runtime ran it.
func TestGPU_Globals(t *testing.T) {
	t.Parallel()
	plainOwn, plainKeys := globalNames(t, engine.Options{Slots: 1})
	suffix := "," + strings.Join(gpuGlobals, ",")
	for i := range 50 {
		own, keys := globalNames(t, engine.Options{Slots: 1, Bindings: []engine.Binding{Binding(nil)}})
		require.Equal(t, plainOwn+suffix, own, "Object.getOwnPropertyNames(globalThis) of sandbox %d", i)
		require.Equal(t, plainKeys+suffix, keys, "Object.keys(globalThis) of sandbox %d", i)
	}
	f := newFakeGPU(t)
	drv := f.open(t, 2)
	own, keys := globalNames(t, engine.Options{Slots: 1, Bindings: []engine.Binding{Binding(drv)}, GPUs: Ordinals(drv)})
	assert.Equal(t, plainOwn+suffix, own, "with a driver")
	assert.Equal(t, plainKeys+suffix, keys, "with a driver")
}
