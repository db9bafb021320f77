#!/usr/bin/env bash
# gpu-check.sh: riot's GPU check, for a machine with an NVIDIA GPU and driver.
#
# It builds the gpu package (with CGO_ENABLED=0, as releases are built), runs
# all of its tests with RIOT_GPU_REAL=1 (so the tests that need the real driver
# run, and a missing driver is a failure instead of a skip), then a short
# benchmark: Sync overhead, host<->device bandwidth and gemm TFLOP/s through the
# binding. It prints a short table last and finishes in under five minutes.
#
# Usage:
#   scripts/gpu-check.sh
#       needs Go and the module cache (or network) for the build;
#   GPU_TEST_BINARY=/path/gpu.test scripts/gpu-check.sh
#       runs a test binary built elsewhere with
#       CGO_ENABLED=0 go test -c -o gpu.test ./gpu   (no Go needed here).
#
# The libraries are found as the package finds them (libcuda.so.1 by the
# loader; cuBLAS, cuSOLVER, cuSPARSE, NVRTC also in $CUDA_HOME/lib64 and
# /usr/local/cuda/lib64); RIOT_CUDA_LIBRARY, RIOT_CUBLAS_LIBRARY,
# RIOT_CUSOLVER_LIBRARY, RIOT_CUSPARSE_LIBRARY and RIOT_NVRTC_LIBRARY override
# them. RIOT_GPU_BENCH_N (default 4096) and RIOT_GPU_BENCH_MIB (default 64) size
# the benchmark. Exit status: 0 when the build, the tests and the benchmark
# passed.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every step's time limit is capped by what is left of 290 seconds.
limit() {
	local left=$((290 - SECONDS))
	if [ "$left" -lt 1 ]; then left=1; fi
	if [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}

fail=0
bin=${GPU_TEST_BINARY:-}
if [ -n "$bin" ]; then
	bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
	build="prebuilt test binary"
else
	if ! command -v go >/dev/null; then
		echo "gpu-check: go not found; build a test binary elsewhere and set GPU_TEST_BINARY" >&2
		exit 2
	fi
	echo "== build (CGO_ENABLED=0)"
	if CGO_ENABLED=0 timeout "$(limit 100)" go build ./gpu/ &&
		CGO_ENABLED=0 timeout "$(limit 60)" go vet ./gpu/ &&
		CGO_ENABLED=0 timeout "$(limit 100)" go test -c -o "$work/gpu.test" ./gpu/; then
		bin=$work/gpu.test
		build="ok"
	else
		echo "gpu-check: build failed" >&2
		exit 1
	fi
fi

echo "== device"
if command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
else
	echo "(nvidia-smi not found)"
fi

echo "== tests (RIOT_GPU_REAL=1)"
t=$(limit 150)
(cd gpu && RIOT_GPU_REAL=1 timeout "$t" "$bin" -test.count=1 -test.v -test.timeout="$((t > 10 ? t - 5 : t))s") >"$work/test.log" 2>&1
test_rc=$?
grep -E '^\s*--- (FAIL|SKIP)|^(FAIL|ok|PASS)$|real_test.go:[0-9]+: (device|cuBLAS|cuSOLVER|cuSPARSE|NVRTC)' "$work/test.log"
if [ $test_rc -ne 0 ]; then
	fail=1
	echo "-- test log (last 60 lines)"
	tail -n 60 "$work/test.log"
fi
passed=$(grep -cE '^\s*--- PASS' "$work/test.log")
skipped=$(grep -cE '^\s*--- SKIP' "$work/test.log")
failed=$(grep -cE '^\s*--- FAIL' "$work/test.log")

echo "== benchmark"
(cd gpu && RIOT_GPU_REAL=1 timeout "$(limit 100)" "$bin" -test.run '^$' -test.bench . -test.benchtime 1s -test.count=1) >"$work/bench.log" 2>&1
bench_rc=$?
grep -E '^Benchmark|FAIL|skip' "$work/bench.log"
if [ $bench_rc -ne 0 ]; then
	fail=1
	echo "-- benchmark log (last 40 lines)"
	tail -n 40 "$work/bench.log"
fi

echo
echo "== riot gpu check"
printf '%-34s %s\n' "build" "$build"
printf '%-34s %s\n' "tests" "$passed passed, $skipped skipped, $failed failed (exit $test_rc)"
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	ns = ""; mbs = ""; tf = ""
	for (i = 2; i <= NF; i++) {
		if ($i == "ns/op") ns = $(i-1)
		if ($i == "MB/s") mbs = $(i-1)
		if ($i == "TFLOP/s") tf = $(i-1)
	}
	label = name
	if (name == "Sync/idle") label = "sync, idle stream"
	else if (name == "Sync/empty_kernel") label = "launch + sync, empty kernel"
	else if (name ~ /^Copy\/HtoD_/) { sub(/^Copy\/HtoD_/, "", name); label = "host->device " name " (pageable)" }
	else if (name ~ /^Copy\/DtoH_/) { sub(/^Copy\/DtoH_/, "", name); label = "device->host " name " (pageable)" }
	else if (name ~ /^Gemm\/float32_/) { sub(/^Gemm\/float32_/, "", name); label = "sgemm n=" name }
	else if (name ~ /^Gemm\/float64_/) { sub(/^Gemm\/float64_/, "", name); label = "dgemm n=" name }
	if (tf != "") value = sprintf("%.1f TFLOP/s", tf)
	else if (mbs != "") value = sprintf("%.1f GB/s", mbs / 1000)
	else value = sprintf("%.1f us", ns / 1000)
	printf "%-34s %s\n", label, value
}' "$work/bench.log"
if [ $bench_rc -ne 0 ]; then
	printf '%-34s %s\n' "benchmark" "failed (exit $bench_rc)"
fi
exit $fail
