package gpu

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpError_Classification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		kind Kind
		code int
		msg  string
	}{
		{"plain", errors.New("no device 4 among 1"), Logic, 0, "deviceResources: no device 4 among 1"},
		{"cuda out of memory",
			&statusError{fn: "cuMemAlloc_v2", code: 2, name: "CUDA_ERROR_OUT_OF_MEMORY", desc: "out of memory", oom: true},
			OutOfMemory, 2, "deviceResources: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{"wrapped status", fmt.Errorf("allocating: %w", &statusError{fn: "f", code: 700, name: "CUDA_ERROR_ILLEGAL_ADDRESS"}),
			Logic, 700, "deviceResources: allocating: f: CUDA_ERROR_ILLEGAL_ADDRESS (700)"},
		{"library alloc failure", libCheck(CUSPARSE, "cusparseCreate", 2), OutOfMemory, 2,
			"deviceResources: cusparseCreate: CUSPARSE_STATUS_ALLOC_FAILED (2)"},
		{"cusolver alloc failure", libCheck(CUSOLVER, "cusolverDnCreate", 2), OutOfMemory, 2,
			"deviceResources: cusolverDnCreate: CUSOLVER_STATUS_ALLOC_FAILED (2)"},
		{"cublas other", libCheck(CUBLAS, "cublasSgemm_v2", 7), Logic, 7,
			"deviceResources: cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE (7)"},
		{"an *Error keeps its kind and takes the op",
			&Error{Op: OpDeviceArray, Kind: OutOfMemory, Code: 2, Err: errors.New("full")}, OutOfMemory, 2,
			"deviceResources: full"},
	}
	for _, tc := range tests {
		err := opError(OpDeviceResources, tc.err)
		var ge *Error
		require.ErrorAs(t, err, &ge, tc.name)
		assert.Equal(t, tc.kind, ge.Kind, tc.name)
		assert.Equal(t, tc.code, ge.Code, tc.name)
		assert.EqualError(t, err, tc.msg, tc.name)
	}
	assert.NoError(t, opError(OpDeviceResources, nil))
	assert.NoError(t, libCheck(CUBLAS, "x", 0))
}

func TestEffectiveOptions(t *testing.T) {
	t.Parallel()
	h200 := DeviceInfo{Major: 9, Minor: 0}
	tests := []struct {
		opts        []string
		machineCode bool
		want        []string
		added, real bool
	}{
		{nil, true, []string{"--gpu-architecture=sm_90"}, true, true},
		{nil, false, []string{"--gpu-architecture=compute_90"}, true, false},
		{[]string{"-lineinfo"}, true, []string{"-lineinfo", "--gpu-architecture=sm_90"}, true, true},
		{[]string{"-lineinfo"}, false, []string{"-lineinfo", "--gpu-architecture=compute_90"}, true, false},
		{[]string{"--gpu-architecture=sm_90a"}, false, []string{"--gpu-architecture=sm_90a"}, false, true},
		{[]string{"-arch=compute_80"}, true, []string{"-arch=compute_80"}, false, false},
		{[]string{"-arch", "sm_80"}, false, []string{"-arch", "sm_80"}, false, true},
	}
	for _, tc := range tests {
		k := Kernel{Source: "s", Name: "k", Options: tc.opts}
		got, added := effectiveOptions(k, h200, tc.machineCode)
		assert.Equal(t, tc.want, got, "%q", tc.opts)
		assert.Equal(t, tc.added, added, "%q", tc.opts)
		assert.Equal(t, tc.real, realArch(got), "%q", tc.opts)
	}
	a := keyOf(Kernel{Source: "ab"}, []string{"c"})
	assert.NotEqual(t, a, keyOf(Kernel{Source: "a"}, []string{"bc"}), "source and options are separated")
	assert.Equal(t, a, keyOf(Kernel{Source: "ab", Name: "other"}, []string{"c"}), "one program, several functions")
}

func TestCandidates(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{
		"libcublas.so.13", "/opt/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
		"libcublas.so.12", "/opt/cuda/lib64/libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.12",
	}, candidates(CUBLAS.sonames(13), "/opt/cuda"))
	assert.Equal(t, []string{"libcusparse.so.12", "/usr/local/cuda/lib64/libcusparse.so.12"},
		candidates(CUSPARSE.sonames(0), ""))
	// A CUDA 12 driver cannot use CUDA 13's libraries.
	assert.Equal(t, []string{"libcusolver.so.11"}, CUSOLVER.sonames(12))
	assert.Equal(t, []string{"libnvrtc.so.13", "libnvrtc.so.12"}, NVRTC.sonames(0))
}

func TestDepsOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file   string
		driver int
		want   []string
	}{
		{"/usr/local/cuda/lib64/libcublas.so.13", 13, []string{"libcublasLt.so.13"}},
		{"/x/libcublas.so.12.9.1.4", 0, []string{"libcublasLt.so.12"}},
		{"/x/libcusolver.so.12", 13, []string{"libnvJitLink.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcusparse.so.12"}},
		{"/x/libcusolver.so.11", 12, []string{"libnvJitLink.so.12", "libcublasLt.so.12", "libcublas.so.12", "libcusparse.so.12"}},
		{"/x/libcusparse.so.12", 13, []string{"libnvJitLink.so.13"}},
		{"/x/libcusparse.so.12", 0, []string{"libnvJitLink.so.*"}},
		{"/x/libnvrtc.so.13", 13, []string{"libnvrtc-builtins.so.13.*"}},
		{"/x/libcusolver.so.99", 13, nil},
		{"/x/libfakecuda.so", 13, nil},
	} {
		assert.Equal(t, tc.want, depsOf(tc.file, tc.driver), tc.file)
	}
}

func TestShapes(t *testing.T) {
	t.Parallel()
	n, err := shapeSize([]int{2, 3, 4})
	require.NoError(t, err)
	assert.Equal(t, 24, n)
	_, err = shapeSize([]int{1 << 40, 1 << 40})
	assert.EqualError(t, err, "shape [1099511627776 1099511627776] is too large")
	s, err := checkShape(nil, 5)
	require.NoError(t, err)
	assert.Equal(t, []int{5}, s)
}
