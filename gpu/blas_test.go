package gpu_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

// refGemm computes alpha·op(A)·op(B) + beta·C on row-major slices.
func refGemm(transA, transB bool, m, n, k int, alpha float64, a, b []float64, beta float64, c []float64) []float64 {
	at := func(i, l int) float64 { // op(A)[i][l]
		if transA {
			return a[l*m+i]
		}
		return a[i*k+l]
	}
	bt := func(l, j int) float64 { // op(B)[l][j]
		if transB {
			return b[j*k+l]
		}
		return b[l*n+j]
	}
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var sum float64
			for l := range k {
				sum += at(i, l) * bt(l, j)
			}
			out[i*n+j] = alpha*sum + beta*c[i*n+j]
		}
	}
	return out
}

func randomMatrix(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(rng.IntN(9) - 4) // small integers: exact in float32 too
	}
	return out
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func TestGemm_RowMajor(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	checkGemm(t, r)
	assert.EqualValues(t, 1, f.counter(t, "blas_handles"), "one handle, made on first use")
	assert.EqualValues(t, 1, f.counter(t, "blas_stream_sets"))
}

// checkGemm compares Gemm on r, in both element types, with refGemm over
// shapes and transpositions. Entries are small integers, so the results are
// exact in either type.
func checkGemm(t *testing.T, r *gpu.Resources) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	arr := noErr[*gpu.Array](t)
	tests := []struct {
		name           string
		transA, transB bool
		m, n, k        int
		alpha, beta    float64
	}{
		{"square", false, false, 3, 3, 3, 1, 0},
		{"rectangular", false, false, 2, 5, 3, 1, 0},
		{"transposed A", true, false, 4, 2, 3, 2, 0},
		{"transposed B", false, true, 3, 4, 2, 1, 1},
		{"both transposed", true, true, 2, 3, 4, -1, 0.5},
		{"vector", false, false, 1, 1, 7, 1, 0},
		{"larger", false, true, 67, 33, 45, 1, 0},
	}
	for _, tc := range tests {
		for _, dtype := range []gpu.DType{gpu.Float32, gpu.Float64} {
			a := randomMatrix(rng, tc.m*tc.k)
			b := randomMatrix(rng, tc.k*tc.n)
			c := randomMatrix(rng, tc.m*tc.n)
			ashape, bshape := []int{tc.m, tc.k}, []int{tc.k, tc.n}
			if tc.transA {
				ashape = []int{tc.k, tc.m}
			}
			if tc.transB {
				bshape = []int{tc.n, tc.k}
			}
			want := refGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, b, tc.beta, c)
			var da, db, dc *gpu.Array
			if dtype == gpu.Float32 {
				da = arr(gpu.NewArray(ctx, r, toFloat32(a), ashape...))
				db = arr(gpu.NewArray(ctx, r, toFloat32(b), bshape...))
				dc = arr(gpu.NewArray(ctx, r, toFloat32(c), tc.m, tc.n))
			} else {
				da = arr(gpu.NewArray(ctx, r, a, ashape...))
				db = arr(gpu.NewArray(ctx, r, b, bshape...))
				dc = arr(gpu.NewArray(ctx, r, c, tc.m, tc.n))
			}
			require.NoError(t, r.Gemm(ctx, tc.transA, tc.transB, tc.alpha, da, db, tc.beta, dc), tc.name)
			got := make([]float64, tc.m*tc.n)
			if dtype == gpu.Float32 {
				got32 := make([]float32, len(got))
				require.NoError(t, gpu.CopyToHost(ctx, dc, got32))
				for i, v := range got32 {
					got[i] = float64(v)
				}
			} else {
				require.NoError(t, gpu.CopyToHost(ctx, dc, got))
			}
			assert.Equal(t, want, got, "%s %v", tc.name, dtype)
			for _, x := range []*gpu.Array{da, db, dc} {
				require.NoError(t, x.Free())
			}
		}
	}
}

func TestMatMul(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	arr := noErr[*gpu.Array](t)
	a := arr(gpu.NewArray(ctx, r, []float64{1, 2, 3, 4, 5, 6}, 2, 3))
	b := arr(gpu.NewArray(ctx, r, []float64{7, 8, 9, 10, 11, 12}, 3, 2))
	c, err := r.MatMul(ctx, a, b)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2}, c.Shape())
	got := make([]float64, 4)
	require.NoError(t, gpu.CopyToHost(ctx, c, got))
	assert.Equal(t, []float64{58, 64, 139, 154}, got)

	tests := []struct {
		name string
		call func() error
		op   string
		msg  string
	}{
		{"inner dimensions", func() error { _, err := r.MatMul(ctx, a, a); return err }, gpu.OpMatMul,
			"matMul: shapes do not match: op(A) is 2×3, op(B) 2×3, C [2 3]"},
		{"output shape", func() error { return r.Gemm(ctx, false, false, 1, a, b, 0, a) }, gpu.OpGemm,
			"gemm: shapes do not match: op(A) is 2×3, op(B) 3×2, C [2 3]"},
		{"not a matrix", func() error {
			v := arr(gpu.NewArray(ctx, r, []float64{1, 2}))
			_, err := r.MatMul(ctx, v, v)
			return err
		}, gpu.OpMatMul, "matMul: gpu.Array(float64 [2] on device 0) is not two-dimensional"},
		{"mixed element types", func() error {
			s := arr(gpu.NewArray(ctx, r, []float32{1, 2, 3, 4, 5, 6}, 3, 2))
			_, err := r.MatMul(ctx, a, s)
			return err
		}, gpu.OpMatMul, "matMul: gpu.Array(float64 [2 3] on device 0) and gpu.Array(float32 [3 2] on device 0) differ in element type"},
	}
	for _, tc := range tests {
		err := tc.call()
		requireKind(t, err, tc.op, gpu.Logic)
		assert.EqualError(t, err, tc.msg, tc.name)
	}
}

// noErr returns a function that fails t on an error and otherwise passes
// the value on, for calls in expressions: arr := noErr[*gpu.Array](t).
func noErr[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}

// A library loaded from a folder outside the loader's search path finds
// its own dependencies there: here an NVRTC that needs
// libnvrtc-builtins.so.13.0 beside it, as the real one does.
func TestLibrary_DependenciesFromItsFolder(t *testing.T) {
	t.Parallel()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found")
	}
	f := newFakeCUDA(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "builtins.c")
	require.NoError(t, os.WriteFile(empty, []byte("int nvrtc_builtins_fake_marker(void) { return 42; }\n"), 0o644))
	builtins := filepath.Join(dir, "libnvrtc-builtins.so.13.0")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-Wl,-soname,libnvrtc-builtins.so.13.0", "-o", builtins, empty).CombinedOutput()
	require.NoError(t, err, "%s", out)
	src, err := filepath.Abs(filepath.Join("testdata", "fakecuda.c"))
	require.NoError(t, err)
	nvrtc := filepath.Join(dir, "libnvrtc.so.13")
	out, err = exec.Command(cc, "-shared", "-fPIC", "-O0", "-Wl,-Bsymbolic", "-Wl,--no-as-needed", "-o", nvrtc, src,
		"-L"+dir, "-l:libnvrtc-builtins.so.13.0", "-lpthread").CombinedOutput()
	require.NoError(t, err, "%s", out)

	r := f.resources(t, gpu.WithLibrary(gpu.NVRTC, nvrtc))
	ctx := context.Background()
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float64{1, 2, 3}))
	k := gpu.Kernel{Source: scaleSource, Name: "scale_f64"}
	err = r.Launch(ctx, k, gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 32}}, 2.0, x, int64(3))
	require.NoError(t, err, "libnvrtc-builtins.so.13.0 is not in the loader's search path, only beside libnvrtc.so.13")
	got := make([]float64, 3)
	require.NoError(t, gpu.CopyToHost(ctx, x, got))
	assert.Equal(t, []float64{2, 4, 6}, got)
	assert.Equal(t, nvrtc, r.Driver().LibraryPath(gpu.NVRTC))
}
