/*
 * anchor.c: the GPU check's yardstick. It times, without riot, what riot's
 * gpu benchmarks time, with the CUDA driver API and cuBLAS called from C on
 * the same card in the same run, so that scripts/gpu-check.sh can print
 * riot's figures as fractions of these:
 *
 *   htod_gbs, dtoh_gbs   cuMemcpyHtoD / cuMemcpyDtoH of a page-locked buffer
 *                        (cuMemHostAlloc) of MIB MiB, GB/s (1e9 bytes)
 *   sync_us              cuStreamSynchronize of an idle stream, microseconds
 *   sgemm, dgemm         cublasSgemm / cublasDgemm, n×n, TFLOP/s
 *   tf32                 cublasGemmEx, float32 with CUBLAS_COMPUTE_32F_FAST_TF32
 *   bf16, f16            cublasGemmEx, A, B, C in bf16 / f16, CUBLAS_COMPUTE_32F
 *
 * Each product is timed as riot's benchmark times it: a product then a
 * synchronization, repeated for about TIME seconds after a first product,
 * on a non-blocking stream of the primary context. Copies and sync take the
 * best of several runs.
 *
 * Build (scripts/gpu-check.sh does): gcc -O2 -o anchor anchor.c
 *   -I$CUDA/include -L$CUDA/lib64 -L$CUDA/lib64/stubs -lcublas -lcuda
 * Usage: anchor [N [MIB [TIME]]] (defaults 4096, 64, 1.0). It prints one
 * "anchor KEY VALUE" line per figure and exits 1 on any CUDA error.
 */
#include <cublas_v2.h>
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CU(call)                                                                       \
	do {                                                                               \
		CUresult r_ = (call);                                                          \
		if (r_ != CUDA_SUCCESS) {                                                      \
			const char *name_ = "?";                                                   \
			cuGetErrorName(r_, &name_);                                                \
			fprintf(stderr, "anchor: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, name_); \
			exit(1);                                                                   \
		}                                                                              \
	} while (0)

#define BLAS(call)                                                                        \
	do {                                                                                  \
		cublasStatus_t s_ = (call);                                                       \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
			fprintf(stderr, "anchor: %s:%d: %s: status %d\n", __FILE__, __LINE__, #call, s_); \
			exit(1);                                                                      \
		}                                                                                 \
	} while (0)

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static CUstream stream;
static cublasHandle_t blas;

enum kind { SGEMM, DGEMM, TF32, BF16, F16 };

static void product(enum kind k, int n, CUdeviceptr a, CUdeviceptr c) {
	float one = 1, zero = 0;
	double d1 = 1, d0 = 0;
	switch (k) {
	case SGEMM:
		BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (float *)a, n, (float *)a, n, &zero, (float *)c, n));
		break;
	case DGEMM:
		BLAS(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &d1, (double *)a, n, (double *)a, n, &d0, (double *)c, n));
		break;
	case TF32:
		BLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (void *)a, CUDA_R_32F, n, (void *)a, CUDA_R_32F, n,
		                  &zero, (void *)c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
		break;
	case BF16:
		BLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (void *)a, CUDA_R_16BF, n, (void *)a, CUDA_R_16BF, n,
		                  &zero, (void *)c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		break;
	case F16:
		BLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (void *)a, CUDA_R_16F, n, (void *)a, CUDA_R_16F, n,
		                  &zero, (void *)c, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		break;
	}
}

static double gemm_tflops(enum kind k, int n, double seconds) {
	size_t size = (k == DGEMM ? 8 : k == BF16 || k == F16 ? 2 : 4) * (size_t)n * n;
	CUdeviceptr a, c;
	CU(cuMemAlloc(&a, size));
	CU(cuMemAlloc(&c, size));
	CU(cuMemsetD8(a, 0, size));
	product(k, n, a, c); /* cuBLAS picks and loads its kernels */
	CU(cuStreamSynchronize(stream));
	int reps = 0;
	double start = now(), t;
	do {
		product(k, n, a, c);
		CU(cuStreamSynchronize(stream));
		reps++;
	} while ((t = now() - start) < seconds);
	CU(cuMemFree(a));
	CU(cuMemFree(c));
	return 2.0 * n * n * (double)n * reps / t / 1e12;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 4096;
	size_t bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 64) << 20;
	double seconds = argc > 3 ? atof(argv[3]) : 1.0;

	CUdevice dev;
	CUcontext ctx;
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	char name[256];
	CU(cuDeviceGetName(name, sizeof name, dev));
	printf("anchor device %s\n", name);

	void *host;
	CUdeviceptr d;
	CU(cuMemHostAlloc(&host, bytes, 0));
	CU(cuMemAlloc(&d, bytes));
	double best_in = 1e9, best_out = 1e9;
	for (int i = 0; i < 10; i++) {
		double t = now();
		CU(cuMemcpyHtoD(d, host, bytes));
		if ((t = now() - t) < best_in)
			best_in = t;
		t = now();
		CU(cuMemcpyDtoH(host, d, bytes));
		if ((t = now() - t) < best_out)
			best_out = t;
	}
	printf("anchor htod_gbs %.2f\n", bytes / best_in / 1e9);
	printf("anchor dtoh_gbs %.2f\n", bytes / best_out / 1e9);
	CU(cuMemFree(d));
	CU(cuMemFreeHost(host));

	double best_sync = 1e9;
	for (int round = 0; round < 5; round++) {
		const int reps = 10000;
		double t = now();
		for (int i = 0; i < reps; i++)
			CU(cuStreamSynchronize(stream));
		if ((t = (now() - t) / reps) < best_sync)
			best_sync = t;
	}
	printf("anchor sync_us %.3f\n", best_sync * 1e6);

	BLAS(cublasCreate(&blas));
	BLAS(cublasSetStream(blas, stream));
	static const struct {
		enum kind k;
		const char *key;
	} products[] = {{SGEMM, "sgemm"}, {DGEMM, "dgemm"}, {TF32, "tf32"}, {BF16, "bf16"}, {F16, "f16"}};
	for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
		printf("anchor %s %.2f\n", products[i].key, gemm_tflops(products[i].k, n, seconds));
		fflush(stdout);
	}
	BLAS(cublasDestroy(blas));
	CU(cuStreamDestroy(stream));
	CU(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
