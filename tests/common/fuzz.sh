# SPDX-License-Identifier: MIT
# Sourced by the libFuzzer tests (tests/analysis/fuzz.sh, tests/engine/weights/fuzz.sh):
#   fuzz_setup NAME       finds clang and its libFuzzer runtime (else exit 77, TAP skip) and
#                         makes $dir (removed on exit) with $dir/corpus for the seeds
#   fuzz_build ARGS...    clang -fsanitize=fuzzer,address,undefined ARGS -o $dir/fuzz: TAP 1
#   fuzz_run MAX_LEN      FUZZ_SECONDS (default 20) over $dir/corpus: TAP 2; exits the script
#                         (0 no crash; 1 a crash, leak or hang, reproducers copied to /tmp)
fuzz_setup() {
    secs=${FUZZ_SECONDS:-20}
    cc=""
    for c in clang clang-14 clang-15 clang-16; do
        if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
    done
    if [ -z "$cc" ]; then echo "1..0 # SKIP clang not installed"; exit 77; fi
    dir=$(mktemp -d "/tmp/arb-fuzz-$1-XXXXXX") || exit 1
    trap 'rm -rf "$dir"' EXIT
    echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$dir/probe.c"
    if ! "$cc" -fsanitize=fuzzer "$dir/probe.c" -o "$dir/probe" 2>/dev/null; then
        echo "1..0 # SKIP $cc has no libFuzzer runtime (Debian: apt-get install libclang-rt-14-dev)"
        exit 77
    fi
    mkdir -p "$dir/corpus"
}

fuzz_build() {
    if ! "$cc" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        "$@" -o "$dir/fuzz" 2>"$dir/cc.log"; then
        echo "not ok 1 - build the fuzzer"; sed 's/^/# /' "$dir/cc.log" | head -20; echo "1..1"; exit 1
    fi
    echo "ok 1 - build the fuzzer with $cc"
}

fuzz_run() {
    if (cd "$dir" && ./fuzz -max_total_time="$secs" -max_len="$1" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 corpus >fuzz.log 2>&1); then
        echo "ok 2 - ${secs}s of fuzzing: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/fuzz.log" | grep -o '[0-9]*$') inputs, no crash"
        echo "1..2"
        exit 0
    fi
    echo "not ok 2 - the fuzzer found a crash, leak or hang:"
    grep -E 'ERROR|SUMMARY|Test unit written' "$dir/fuzz.log" | sed 's/^/# /' | head -20
    cp "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* /tmp/ 2>/dev/null && echo "# reproducers copied to /tmp"
    echo "1..2"
    exit 1
}
