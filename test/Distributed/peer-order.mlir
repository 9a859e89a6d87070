// NCCL matches the messages between two GPUs by their order alone, and a
// send completes only once received. `--transport mpi-in-order` runs MPI by
// those rules (a transfer's tag names only its device pair; synchronous
// sends), so a CPU run shows whether a program can run over NCCL. With two
// stages per device, 1F1B, zero-bubble, Mixed-Pipe and pipedream-async send
// device 1 activations and gradients of different stage pairs in another
// order than device 1 receives them; compiled with peer-order (device 1's
// recvs moved earlier), every kind runs in order on 2 ranks, bit for bit
// equal to its single-process run. The 1F1B program compiled without
// peer-order is refused at start-up, before any step, and still runs over
// the tagged transport, with the same losses as the peer-ordered one.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:4x2x16:64 input1:I64:4x2x16:61
//
// RUN: env MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t gpipe "devices=2 stages-per-device=2" "kind=gpipe microbatches=4 peer-order=true" | FileCheck %s
// RUN: env MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t 1f1b "devices=2 stages-per-device=2" "kind=1f1b microbatches=4 peer-order=true" | FileCheck %s
// RUN: env MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t interleaved "devices=2 stages-per-device=2" "kind=interleaved-1f1b microbatches=4 peer-order=true" | FileCheck %s
// RUN: env MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t zb-h1 "devices=2 stages-per-device=2" "kind=zb-h1 microbatches=4 peer-order=true" | FileCheck %s
// RUN: env MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t mixed "devices=2 stages-per-device=2" "kind=mixed microbatches=4 peer-order=true" | FileCheck %s
// RUN: env MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t stash "devices=2 stages-per-device=2" "kind=pipedream-async microbatches=4 weights=stash steps=2 peer-order=true" | FileCheck %s
// RUN: env MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t stale "devices=2 stages-per-device=2" "kind=pipedream-async microbatches=4 weights=stale steps=2 peer-order=true" | FileCheck %s
//
// On the staged backend (device memory the host may not address, as a
// GPU's) the transport carries the device buffers themselves, as NCCL
// would: the sender packs a transfer's values into one device buffer, the
// receiver unpacks them from its own; nothing goes through host memory.
// RUN: env PIPE_RT_BACKEND=staged MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t staged-1f1b "devices=2 stages-per-device=2" "kind=1f1b microbatches=4 peer-order=true" | FileCheck %s
// RUN: env PIPE_RT_BACKEND=staged MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t staged-zb "devices=2 stages-per-device=2" "kind=zb-h1 microbatches=4 peer-order=true" | FileCheck %s
// RUN: env PIPE_RT_BACKEND=staged MPIRUN="%mpirun" RANKS_TRANSPORT=mpi-in-order %S/Inputs/run-both.sh %t staged-stash "devices=2 stages-per-device=2" "kind=pipedream-async microbatches=4 weights=stash steps=2 peer-order=true" | FileCheck %s
// 4 devices on 2 ranks: 0 -> 1 and 2 -> 3 by reference within a rank,
// 1 -> 2 and back as device buffers between the ranks.
// RUN: pipe-opt %t/base.mlir --pipe-place=devices=4 "--pipe-schedule=kind=1f1b microbatches=4 peer-order=true" -o %t/four.mlir
// RUN: pipe-compile %t/four.mlir -o %t/four.so -O 0
// RUN: pipe-runner %t/four.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --log-json %t/four.one.jsonl --save-weights %t/four.one.st
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 2 pipe-runner %t/four.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --transport mpi-in-order --devices-per-rank 2 --log-json %t/four.two.jsonl --save-weights %t/four.two.st --profile %t/four.prof
// RUN: %python %S/Inputs/same-run.py %t/four.one.jsonl %t/four.two.jsonl %t/four.one.st %t/four.two.st | FileCheck %s --check-prefix=SAME
// RUN: %python %S/Inputs/check-ranks.py %t/four.prof 2 2 --backend staged | FileCheck %s --check-prefix=FOUR
//
// 2 pipeline x 2 data-parallel ranks, two stages per device: transfers in
// order (device buffers), the buckets summed by the transport in place on
// the devices' memory (MPI_Iallreduce, as NCCL's all-reduce; counted in
// each rank's profile), the tied embedding's reduce_grad over the replicas
// by tag as before; equal to the replicas in one process (two replicas:
// a + b = b + a, bit for bit).
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 stages-per-device=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2 peer-order=true reduce-bucket-bytes=4096" -o %t/dp.mlir
// RUN: pipe-compile %t/dp.mlir -o %t/dp.so -O 0
// RUN: env PIPE_RT_BACKEND=staged pipe-runner %t/dp.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --log-json %t/dp.one.jsonl --save-weights %t/dp.one.st
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 4 pipe-runner %t/dp.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --transport mpi-in-order --data-parallel 2 --log-json %t/dp.four.jsonl --save-weights %t/dp.four.st --profile %t/dp.prof
// RUN: %python %S/Inputs/same-run.py %t/dp.one.jsonl %t/dp.four.jsonl %t/dp.one.st %t/dp.four.st | FileCheck %s --check-prefix=SAME
// RUN: FileCheck %s --check-prefix=SUMMED --input-file %t/dp.prof
// RUN: FileCheck %s --check-prefix=SUMMED --input-file %t/dp.prof.rank3
//
// 4 data-parallel ranks of one device: the transport's sum order is its
// own, so within the data-parallel tolerance of the replicas in one
// process.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 replicas=4" "--pipe-schedule=kind=1f1b microbatches=4 peer-order=true reduce-bucket-bytes=4096" -o %t/dp4.mlir
// RUN: pipe-compile %t/dp4.mlir -o %t/dp4.so -O 0
// RUN: env PIPE_RT_BACKEND=staged pipe-runner %t/dp4.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --log-json %t/dp4.one.jsonl --save-weights %t/dp4.one.st
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 4 pipe-runner %t/dp4.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --transport mpi-in-order --log-json %t/dp4.four.jsonl --save-weights %t/dp4.four.st --profile %t/dp4.prof
// RUN: %python %S/Inputs/same-run.py %t/dp4.one.jsonl %t/dp4.four.jsonl %t/dp4.one.st %t/dp4.four.st 1e-5 1e-7 | FileCheck %s --check-prefix=CLOSE
// RUN: FileCheck %s --check-prefix=SUMMED --input-file %t/dp4.prof.rank2
//
// Without buckets (reduce-bucket-bytes=0: each param's blocking all-reduce
// at the end of the step), the same.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 replicas=4" "--pipe-schedule=kind=1f1b microbatches=4 peer-order=true reduce-bucket-bytes=0" -o %t/dp4p.mlir
// RUN: pipe-compile %t/dp4p.mlir -o %t/dp4p.so -O 0
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 4 pipe-runner %t/dp4p.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --transport mpi-in-order --log-json %t/dp4p.four.jsonl --save-weights %t/dp4p.four.st --profile %t/dp4p.prof
// RUN: %python %S/Inputs/same-run.py %t/dp4.one.jsonl %t/dp4p.four.jsonl %t/dp4.one.st %t/dp4p.four.st 1e-5 1e-7 | FileCheck %s --check-prefix=CLOSE
// RUN: FileCheck %s --check-prefix=SUMMED --input-file %t/dp4p.prof.rank1
//
// The same program over tagged MPI: the runtime's exchanges, none summed
// by the transport.
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 4 pipe-runner %t/dp4.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --transport mpi --log-json %t/dp4.tagged.jsonl --save-weights %t/dp4.tagged.st --profile %t/dp4.tagged.prof
// RUN: %python %S/Inputs/same-run.py %t/dp4.one.jsonl %t/dp4.tagged.jsonl %t/dp4.one.st %t/dp4.tagged.st | FileCheck %s --check-prefix=SAME
// RUN: FileCheck %s --check-prefix=EXCHANGED --input-file %t/dp4.tagged.prof
//
// Without peer-order: refused in order, run by tag.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=1f1b microbatches=4" -o %t/tagged.mlir
// RUN: pipe-compile %t/tagged.mlir -o %t/tagged.so -O 0
// RUN: not %mpirun -np 2 pipe-runner %t/tagged.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --transport mpi-in-order --log-json %t/tagged.jsonl 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: not test -s %t/tagged.jsonl
// RUN: %mpirun -np 2 pipe-runner %t/tagged.so --weights %t/1f1b.w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --transport mpi --log-json %t/tagged.two.jsonl --save-weights %t/tagged.two.st
// RUN: %python %S/Inputs/same-run.py %t/1f1b.one.jsonl %t/tagged.two.jsonl %t/1f1b.one.st %t/tagged.two.st | FileCheck %s --check-prefix=SAME

// CHECK: same: 4 steps, 28 tensors, bit for bit
// CHECK: ranks: 2 processes, each ran only its own devices and sent bytes
// SAME: same: 4 steps, 28 tensors, bit for bit
// CLOSE: same: 4 steps, 28 tensors, {{bit for bit|within rtol 1e-05 atol 1e-07}}
// SUMMED: "all_reduces":{{[1-9][0-9]*}}
// EXCHANGED: "all_reduces":0
// FOUR: ranks: 2 processes, each ran only its own devices and sent bytes, on staged memory
// REFUSED: schedule '{{.*}}' issues the transfers of some device pair in different orders on its two sides, and this transport (MPI with transfers in order: transfers matched by order, as by NCCL) would mismatch them: compile it with peer-order
