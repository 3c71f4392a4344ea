#!/bin/bash
# One GPU run for issue 25: build sm_90 what libarbench needs, install into /tmp/arbp, run ci/gpu-api.py.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T0=$(date +%s)
{ date -u; nvidia-smi; python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count())'; } > $OUT/env.log 2>&1
bash ci/deps.sh --debs ../../.debs > $OUT/deps.log 2>&1
echo "deps done $(( $(date +%s) - T0 )) s" >> $OUT/env.log
meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" -Dtests=false -Dfuzz=disabled --prefix /tmp/arbp > $OUT/setup.log 2>&1 || { echo setup failed >> $OUT/env.log; }
echo "setup done $(( $(date +%s) - T0 )) s" >> $OUT/env.log
T=$(ninja -C build-gpu -t targets all | grep -oE '^(src/api/libarbench\.so\.[0-9.]+|collectives/(nccl|ops-host|mpi-host)/arb-[a-z-]+\.so):' | tr -d : | tr '\n' ' ')
echo "targets: $T" >> $OUT/env.log
ninja -C build-gpu -j16 $T > $OUT/build.log 2>&1 || echo "build failed" >> $OUT/env.log
echo "build done $(( $(date +%s) - T0 )) s" >> $OUT/env.log
L=/tmp/arbp/lib/x86_64-linux-gnu
mkdir -p $L/arbench
cp -a build-gpu/src/api/libarbench.so* $L/ && cp build-gpu/collectives/*/arb-*.so $L/arbench/ 2>>$OUT/env.log
ls -l $L $L/arbench >> $OUT/env.log 2>&1
python3 ci/gpu-api.py --lib $L --iters 100 --rev "$(cat REVISION)" --out $OUT/api.csv > $OUT/api.log 2>&1
echo "gpu-api exit $? at $(( $(date +%s) - T0 )) s" >> $OUT/env.log
tar czf $OUT/x.tgz -C $OUT --exclude x.tgz .
