#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next13.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-first session (2026-12-05): --l2-side (2443bb8: a side branch of the step pulls a layer's
# weights toward L2 with cp.async.bulk.prefetch.L2 while the chain runs) against the default, in
# two forms (o_proj,router,shared during the attention; and those plus the next layer's qkv_a
# during the MoE block), and the twentieth session's owed --attn-fill 4 (the attend kernel at
# 64 registers, four CTAs an SM on SM90); four alternated rounds; then the GPU tests the change
# touched (kernels: l2_pull; persist: the side branch bit-identical, replayed, its PDL edges kept).
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_sa="--l2-side o_proj,router,shared --dump-tokens $O/ab/tokens-sa.txt --force"
export ENGINE_ARGS_s4="--l2-side o_proj,router,shared,qkv_a --dump-tokens $O/ab/tokens-s4.txt --force"
export ENGINE_ARGS_f4="--attn-fill 4 --dump-tokens $O/ab/tokens-f4.txt --force"
DEBS=.debs timeout $(lim 400) bash ci/engine-ab.sh "$O/ab" 4 base=. sa=. s4=. f4=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log"; echo "ab done $(el)"
for n in sa s4 f4; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to base"; done
(ninja -C build-gpu tests/engine/gpu/test_engine_gpu_kernels tests/engine/gpu/test_engine_gpu_persist >"$O/build-tests.log" 2>&1 &&
    timeout $(lim 90) meson test -C build-gpu --no-rebuild "engine gpu kernels" "engine gpu persist" --print-errorlogs >"$O/tests.log" 2>&1)
echo "tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"; grep -E "^not ok|side branch|programmatic" "$O/testlog.txt" | head
