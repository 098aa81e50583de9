#!/bin/bash
cd "$(dirname "$0")/.."
CUDA_INC=$(dirname $(which nvcc))/../include
( g++ -std=c++20 -O1 -Iinclude -I$CUDA_INC exp/one.cpp -o /tmp/one -ldl -lpthread > /tmp/gxx.log 2>&1; echo "g++ rc $?"; tail -3 /tmp/gxx.log ) &
(ninja -C build-gpu -j 14 tutorials/05_hopper_wgmma_tma > /tmp/ninja.log 2>&1 || (meson setup build-gpu . --buildtype=release -Dbenchmarks=true > /dev/null 2>&1 && ninja -C build-gpu -j 14 tutorials/05_hopper_wgmma_tma > /tmp/ninja.log 2>&1); echo "ninja rc $?")
wait
echo "built at $SECONDS s"
export HIDET_CACHE_DIR=/tmp/hc
timeout 120 build-gpu/tutorials/05_hopper_wgmma_tma 2>&1 | grep -v "^hidet:" | tail -30
for shape in "128 2304 768" "128 3072 768" "128 768 768" "128 768 3072" "256 768 768" "2048 768 3072" "2048 768 768"; do
  timeout 30 stdbuf -oL /tmp/one $shape 0 0 0 1 1 1 1 1 2>&1 | grep -v "^hidet:"
  for cfg in "1 128 6 1" "1 256 5 1" "2 128 6 1"; do
    for sp in 1 2 4 8; do
      timeout 30 stdbuf -oL /tmp/one $shape $cfg 1 1 $sp 1 1 2>&1 | grep -v "^hidet:" || echo "  -> exit for $shape $cfg $sp"
    done
  done
done
echo "runs at $SECONDS s"
