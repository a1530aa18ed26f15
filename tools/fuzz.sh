#!/usr/bin/env bash
# libFuzzer campaigns on the parsers of untrusted input (clang, ASan + UBSan):
# the checker's fuzz_number (exact numbers), fuzz_npy (.npy), fuzz_bundle
# (whole bundles with every certificate kind, COO, and safetensors sidecars);
# the producer's fuzz_claims (claims CSV/JSONL, claim results), fuzz_tensor
# (safetensors headers, .npz members, N-d .npy, selectors) and fuzz_hf
# (HuggingFace config.json + model.safetensors).  Seeds: the committed
# bundles, the tests' .npy shapes, the audit example and tests/fuzz/seed_*.  Crashes land in
# build-fuzz/crashes/; each one found becomes a regression test.
#
# usage: tools/fuzz.sh [SECONDS_PER_TARGET]     (default 60; ./build.sh test runs 30)
# Exit status 1 when any crash was found.
# Needs Debian's clang and libclang-rt-14-dev (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || \
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev; break; }
done
out=build-fuzz
mkdir -p "$out/obj" "$out/crashes"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -Iinclude)
objs=()
# An object is rebuilt when its source or any header is newer (a changed
# struct in a header with stale objects is an ODR violation the sanitizers
# report as a crash).
newest_header=$(ls -t include/rankcert/*.hpp src/checker/*.hpp src/checker/cert/*.hpp | head -1)
for f in src/checker/*.cpp src/checker/cert/*.cpp; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  { [ "$o" -nt "$f" ] && [ "$o" -nt "$newest_header" ]; } || clang++ "${flags[@]}" -c "$f" -o "$o"
  objs+=("$o")
done
# The producer's readers of untrusted files (no float linear algebra in them
# but hf.cpp's forward pass, header-only Eigen).
pobjs=()
newest_pheader=$(ls -t include/rankcert/producer/*.hpp "$newest_header" | head -1)
for f in src/producer/claims.cpp src/producer/tensor.cpp src/producer/hf.cpp src/producer/llama2.cpp; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  { [ "$o" -nt "$f" ] && [ "$o" -nt "$newest_pheader" ]; } || clang++ "${flags[@]}" -isystem /usr/include/eigen3 -c "$f" -o "$o"
  pobjs+=("$o")
done
targets=(number npy bundle claims tensor hf)
for t in "${targets[@]}"; do
  extra=()
  case $t in claims|tensor|hf) extra=("${pobjs[@]}" -lz) ;; esac
  clang++ "${flags[@]}" -isystem /usr/include/eigen3 -fsanitize=fuzzer tests/fuzz/fuzz_$t.cpp "${extra[@]}" "${objs[@]}" \
    -lflint-arb -lflint -lmpfr -lgmp -lcrypto -o "$out/fuzz_$t"
done
# Seeds.
mkdir -p "$out/seed_bundle" "$out/seed_npy" "$out/seed_number" "$out/seed_claims" "$out/seed_tensor" "$out/seed_hf"
cp certificates/audit-example/claims.csv certificates/audit-example/results/*.json tests/fuzz/seed_claims_* "$out/seed_claims/" 2>/dev/null || true
cp tests/fuzz/seed_tensor_* "$out/seed_tensor/" 2>/dev/null || true
find certificates -name '*.npy' -size -8k | head -10 | xargs -I{} cp {} "$out/seed_tensor/" 2>/dev/null || true
cp tests/fuzz/seed_hf_* "$out/seed_hf/" 2>/dev/null || true
(ls certificates/kron-small/*.json certificates/block-neumann/*.json tests/fuzz/seed_*.json; find certificates -name '*.json' -size -40k | sort | head -200) | xargs -I{} cp {} "$out/seed_bundle/" 2>/dev/null || true
find certificates -name '*.npy' -size -20k | head -50 | xargs -I{} cp {} "$out/seed_npy/" 2>/dev/null || true
for s in 0.1 -1/3 0x1.8p-3 1e-300 123456789012345678901234567890 -0.0 7/0; do printf '%s' "$s" > "$out/seed_number/$(echo "$s" | md5sum | cut -c1-8)"; done
export ASAN_OPTIONS=detect_leaks=0
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus_$t"
  "$out/fuzz_$t" -seed=1 -max_total_time="$secs" -rss_limit_mb=4096 -timeout=20 -max_len=65536 \
    -artifact_prefix="$out/crashes/$t-" "$out/corpus_$t" "$out/seed_$t" > "$out/log_$t.txt" 2>&1 || true
  echo "fuzz_$t: $(grep -E "DONE|ERROR|SUMMARY" "$out/log_$t.txt" | tail -2 | tr '\t' ' ')"
done
n=$(ls "$out/crashes" | wc -l)
echo "fuzz: $n crashes (in $out/crashes)"
[ "$n" -eq 0 ]
