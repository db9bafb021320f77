package gpu_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

// fakeCUDA is a copy of the FAKE driver and libraries built from
// testdata/fakecuda.c: a test double with the exported names and
// signatures of the CUDA entry points the package binds, host memory
// behind them. Each test builds its own copy, so each has its own state.
type fakeCUDA struct {
	path string
	get  func(key string) int64
	set  func(key string, value int64) int32
}

// newFakeCUDA builds the fake library into t.TempDir() with gcc, skipping
// the test when gcc is missing, and binds its test hooks.
func newFakeCUDA(t testing.TB) *fakeCUDA {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot build the fake CUDA library")
	}
	src, err := filepath.Abs(filepath.Join("testdata", "fakecuda.c"))
	require.NoError(t, err)
	f := &fakeCUDA{path: filepath.Join(t.TempDir(), "libfakecuda.so")}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O0", "-Wall", "-Wl,-Bsymbolic",
		"-o", f.path, src, "-lpthread").CombinedOutput()
	require.NoError(t, err, "building the fake CUDA library: %s", out)
	h, err := purego.Dlopen(f.path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	purego.RegisterLibFunc(&f.get, h, "fakecuda_get")
	purego.RegisterLibFunc(&f.set, h, "fakecuda_set")
	return f
}

// setting changes one of the fake's settings (see fakecuda.c).
func (f *fakeCUDA) setting(t testing.TB, key string, value int64) {
	t.Helper()
	require.Zero(t, f.set(key, value), "unknown fake setting %q", key)
}

// counter reads one of the fake's counters or settings.
func (f *fakeCUDA) counter(t testing.TB, key string) int64 {
	t.Helper()
	v := f.get(key)
	require.NotEqual(t, int64(-1), v, "unknown fake counter %q", key)
	return v
}

// options point the driver and every library at the fake.
func (f *fakeCUDA) options() []gpu.Option {
	return []gpu.Option{
		gpu.WithDriverLibrary(f.path),
		gpu.WithLibrary(gpu.CUBLAS, f.path),
		gpu.WithLibrary(gpu.CUSOLVER, f.path),
		gpu.WithLibrary(gpu.CUSPARSE, f.path),
		gpu.WithLibrary(gpu.NVRTC, f.path),
	}
}

// open opens a Driver on the fake, closed when the test ends.
func (f *fakeCUDA) open(t testing.TB, extra ...gpu.Option) *gpu.Driver {
	t.Helper()
	d, err := gpu.Open(append(f.options(), extra...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// resources opens a Driver on the fake and makes resources on device 0.
func (f *fakeCUDA) resources(t testing.TB, extra ...gpu.Option) *gpu.Resources {
	t.Helper()
	d := f.open(t, extra...)
	r, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

// requireKind asserts that err is a *gpu.Error of the operation and kind.
func requireKind(t testing.TB, err error, op string, kind gpu.Kind) *gpu.Error {
	t.Helper()
	require.Error(t, err)
	var ge *gpu.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, op, ge.Op, "op of %v", err)
	require.Equal(t, kind, ge.Kind, "kind of %v", err)
	return ge
}
