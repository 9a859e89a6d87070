// Ranks whose devices' memory the host cannot address (a GPU's): the
// staged backend (PIPE_RT_BACKEND=staged) uses the simulated devices the
// way the GPU backend uses a GPU, every host access through a copy. Within
// a rank, transfers move device buffers by reference; to another rank, the
// values go through host memory (copied out at the send, in at the
// receive), as do the gradients a reduce_grad or a bucket sums across
// ranks. The runs equal the host-memory runs of the same programs bit for
// bit, and every rank's profile names the staged memory.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:4x2x16:64 input1:I64:4x2x16:61
//
// 1F1B on 2 ranks: activations and gradients cross ranks, and the tied
// embedding's reduce_grad sums both ranks' gradients; with clipping.
// RUN: pipe-opt %t/base.mlir --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=4" -o %t/p2.mlir
// RUN: pipe-compile %t/p2.mlir -o %t/p2.so --weights %t/w0 -O 0
// RUN: pipe-runner %t/p2.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --clip 0.5 --log-json %t/p2.host.jsonl --save-weights %t/p2.host.st
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 2 pipe-runner %t/p2.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --clip 0.5 --log-json %t/p2.staged.jsonl --save-weights %t/p2.staged.st --profile %t/p2.prof
// RUN: %python %S/Inputs/same-run.py %t/p2.host.jsonl %t/p2.staged.jsonl %t/p2.host.st %t/p2.staged.st | FileCheck %s
// RUN: %python %S/Inputs/check-ranks.py %t/p2.prof 2 1 --backend staged | FileCheck %s --check-prefix=RANKS2
//
// 4 devices on 2 ranks (--devices-per-rank 2): 0 -> 1 and 2 -> 3 stay in a
// rank (by reference), 1 -> 2 crosses; pipedream-async with weight stashes.
// RUN: pipe-opt %t/base.mlir --pipe-place=devices=4 "--pipe-schedule=kind=pipedream-async microbatches=4 weights=stash steps=2" -o %t/p4.mlir
// RUN: pipe-compile %t/p4.mlir -o %t/p4.so -O 0
// RUN: pipe-runner %t/p4.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --log-json %t/p4.host.jsonl --save-weights %t/p4.host.st
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 2 pipe-runner %t/p4.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --devices-per-rank 2 --log-json %t/p4.staged.jsonl --save-weights %t/p4.staged.st --profile %t/p4.prof
// RUN: %python %S/Inputs/same-run.py %t/p4.host.jsonl %t/p4.staged.jsonl %t/p4.host.st %t/p4.staged.st | FileCheck %s
// RUN: %python %S/Inputs/check-ranks.py %t/p4.prof 2 2 --backend staged | FileCheck %s --check-prefix=RANKS4
//
// 2 pipeline x 2 data-parallel ranks: buckets of a device's own params and
// the tied embedding's reduce_grad over replicas and devices, and the
// blocking form (one reduce_grad per param), against the same programs'
// replicas in one process on host memory.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2 reduce-bucket-bytes=4096" -o %t/dp.mlir
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=1f1b microbatches=2 reduce-bucket-bytes=0" -o %t/dp-blocking.mlir
// RUN: pipe-compile %t/dp.mlir -o %t/dp.so -O 0
// RUN: pipe-compile %t/dp-blocking.mlir -o %t/dp-blocking.so -O 0
// RUN: pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --log-json %t/dp.host.jsonl --save-weights %t/dp.host.st
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 4 pipe-runner %t/dp.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --data-parallel 2 --log-json %t/dp.staged.jsonl --save-weights %t/dp.staged.st --profile %t/dp.prof
// RUN: %python %S/Inputs/same-run.py %t/dp.host.jsonl %t/dp.staged.jsonl %t/dp.host.st %t/dp.staged.st | FileCheck %s
// RUN: %python %S/Inputs/check-ranks.py %t/dp.prof 4 1 2 --backend staged | FileCheck %s --check-prefix=RANKSDP
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 4 pipe-runner %t/dp-blocking.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer sgd --lr 0.1 --data-parallel 2 --log-json %t/dp-blocking.staged.jsonl --save-weights %t/dp-blocking.staged.st
// RUN: %python %S/Inputs/same-run.py %t/dp.host.jsonl %t/dp-blocking.staged.jsonl %t/dp.host.st %t/dp-blocking.staged.st | FileCheck %s
//
// Two L2L replicas, one per rank, each streaming its weights from its own
// rank's parameter server into staged device memory.
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data20.safetensors input0:I64:20x2x16:64 input1:I64:20x2x16:61
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=1 stages-per-device=0 replicas=2" "--pipe-schedule=kind=l2l microbatches=2" -o %t/l2l.mlir
// RUN: pipe-compile %t/l2l.mlir -o %t/l2l.so -O 0
// RUN: pipe-runner %t/l2l.so --weights %t/w0 --data %t/data20.safetensors --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --log-json %t/l2l.host.jsonl --save-weights %t/l2l.host.st
// RUN: env PIPE_RT_BACKEND=staged %mpirun -np 2 pipe-runner %t/l2l.so --weights %t/w0 --data %t/data20.safetensors --steps 5 --eval-every 0 --optimizer sgd --lr 0.1 --log-json %t/l2l.staged.jsonl --save-weights %t/l2l.staged.st
// RUN: %python %S/Inputs/same-run.py %t/l2l.host.jsonl %t/l2l.staged.jsonl %t/l2l.host.st %t/l2l.staged.st | FileCheck %s --check-prefix=L2L

// CHECK: same: 4 steps, 28 tensors, bit for bit
// RANKS2: ranks: 2 processes, each ran only its own devices and sent bytes, on staged memory
// RANKS4: ranks: 2 processes, each ran only its own devices and sent bytes, on staged memory
// RANKSDP: ranks: 4 processes, each ran only its own devices and sent bytes, on staged memory
// L2L: same: 5 steps, 28 tensors, bit for bit
