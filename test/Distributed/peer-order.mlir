// NCCL matches the messages between two GPUs by their order alone, and a
// send completes only once received. `--transport mpi-in-order` runs MPI by
// those rules (a transfer's tag names only its device pair; synchronous
// sends), so a CPU run shows whether a program can run over NCCL. With two
// stages per device, 1F1B, zero-bubble and pipedream-async send device 1
// activations and gradients of different stage pairs in another order than
// device 1 receives them; compiled with peer-order (device 1's recvs moved
// earlier), they run in order on 2 ranks, bit for bit equal to the
// single-process runs. The program compiled without it is refused at
// start-up, before any step, and still runs over the tagged transport.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-gen --model=tiny-gpt | pipe-opt --pipe-lift-params --pipe-form-blocks=granularity=layer --pipe-differentiate -o %t/base.mlir
// RUN: %python %S/../e2e/Inputs/make-data.py %t/data.safetensors input0:I64:4x2x16:64 input1:I64:4x2x16:61
//
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=1f1b microbatches=4 peer-order=true" -o %t/ofob.mlir
// RUN: pipe-compile %t/ofob.mlir -o %t/ofob.so --weights %t/w0 -O 0
// RUN: pipe-runner %t/ofob.so --weights %t/w0 --data %t/data.safetensors --steps 3 --optimizer adamw --lr 0.01 --log-json %t/ofob.one.jsonl --save-weights %t/ofob.one.st
// RUN: %mpirun -np 2 pipe-runner %t/ofob.so --weights %t/w0 --data %t/data.safetensors --steps 3 --optimizer adamw --lr 0.01 --transport mpi-in-order --log-json %t/ofob.ranks.jsonl --save-weights %t/ofob.ranks.st --profile %t/ofob.prof
// RUN: %python %S/Inputs/same-run.py %t/ofob.one.jsonl %t/ofob.ranks.jsonl %t/ofob.one.st %t/ofob.ranks.st | FileCheck %s
// RUN: %python %S/Inputs/check-ranks.py %t/ofob.prof 2 1 | FileCheck %s --check-prefix=RANKS
//
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=zb-h1 microbatches=4 peer-order=true" -o %t/zb.mlir
// RUN: pipe-compile %t/zb.mlir -o %t/zb.so -O 0
// RUN: pipe-runner %t/zb.so --weights %t/w0 --data %t/data.safetensors --steps 3 --optimizer adamw --lr 0.01 --log-json %t/zb.one.jsonl --save-weights %t/zb.one.st
// RUN: %mpirun -np 2 pipe-runner %t/zb.so --weights %t/w0 --data %t/data.safetensors --steps 3 --optimizer adamw --lr 0.01 --transport mpi-in-order --log-json %t/zb.ranks.jsonl --save-weights %t/zb.ranks.st
// RUN: %python %S/Inputs/same-run.py %t/zb.one.jsonl %t/zb.ranks.jsonl %t/zb.one.st %t/zb.ranks.st | FileCheck %s
//
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=pipedream-async microbatches=4 steps=2 weights=stash peer-order=true" -o %t/pd.mlir
// RUN: pipe-compile %t/pd.mlir -o %t/pd.so -O 0
// RUN: pipe-runner %t/pd.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --log-json %t/pd.one.jsonl --save-weights %t/pd.one.st
// RUN: %mpirun -np 2 pipe-runner %t/pd.so --weights %t/w0 --data %t/data.safetensors --steps 4 --optimizer adamw --lr 0.01 --transport mpi-in-order --log-json %t/pd.ranks.jsonl --save-weights %t/pd.ranks.st
// RUN: %python %S/Inputs/same-run.py %t/pd.one.jsonl %t/pd.ranks.jsonl %t/pd.one.st %t/pd.ranks.st | FileCheck %s --check-prefix=PD
//
// Without peer-order: refused in order, run by tag.
// RUN: pipe-opt %t/base.mlir "--pipe-place=devices=2 stages-per-device=2" "--pipe-schedule=kind=1f1b microbatches=4" -o %t/tagged.mlir
// RUN: pipe-compile %t/tagged.mlir -o %t/tagged.so -O 0
// RUN: not %mpirun -np 2 pipe-runner %t/tagged.so --weights %t/w0 --data %t/data.safetensors --steps 3 --optimizer adamw --lr 0.01 --transport mpi-in-order --log-json %t/tagged.jsonl 2>&1 | FileCheck %s --check-prefix=REFUSED
// RUN: not test -s %t/tagged.jsonl
// RUN: %mpirun -np 2 pipe-runner %t/tagged.so --weights %t/w0 --data %t/data.safetensors --steps 3 --optimizer adamw --lr 0.01 --transport mpi --log-json %t/tagged.ranks.jsonl --save-weights %t/tagged.ranks.st
// RUN: %python %S/Inputs/same-run.py %t/ofob.one.jsonl %t/tagged.ranks.jsonl %t/ofob.one.st %t/tagged.ranks.st | FileCheck %s

// CHECK: same: 3 steps, {{[0-9]+}} tensors, bit for bit
// PD: same: 4 steps, {{[0-9]+}} tensors, bit for bit
// RANKS: ranks: 2 processes, each ran only its own devices and sent bytes
// REFUSED: schedule '{{.*}}' issues the transfers of some device pair in different orders on its two sides, and this transport (MPI with transfers in order: transfers matched by order, as by NCCL) would mismatch them: compile it with peer-order
