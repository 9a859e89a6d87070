// Task metrics across ranks: an inference MLP trained on an attached
// cross-entropy with --metric accuracy, compiled for 2 pipeline devices and
// run as 2 MPI ranks, and with 2 data-parallel replicas as 2 ranks: each
// evaluation's counts are summed over the ranks, so the accuracy of the
// initial weights (--lr 0) equals NumPy's, as in one process
// (test/e2e/pipe-train-attach-loss.mlir).
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/../e2e/Inputs/attach-loss-mlp.py make %t cross-entropy
// RUN: pipe-train %t/model.mlir --loss cross-entropy --loss-result 1 --metric accuracy --devices 2 --granularity op --microbatches 2 --batch 8 --artifact %t/pp --compile-only > /dev/null
// RUN: %mpirun -np 2 pipe-runner %t/pp/program.so --weights %t/pp/weights.safetensors --data %t/data.safetensors --steps 1 --eval-every 1 --lr 0 --log-json %t/pp.jsonl | FileCheck %s
// RUN: %python %S/../e2e/Inputs/attach-loss-mlp.py accuracy %t %t/pp.jsonl | FileCheck %s --check-prefix=REF
// RUN: pipe-train %t/model.mlir --loss cross-entropy --loss-result 1 --metric accuracy --devices 1 --data-parallel 2 --artifact %t/dp --compile-only > /dev/null
// RUN: %mpirun -np 2 pipe-runner %t/dp/program.so --weights %t/dp/weights.safetensors --data %t/data.safetensors --steps 1 --eval-every 1 --lr 0 --data-parallel 2 --log-json %t/dp.jsonl | FileCheck %s
// RUN: %python %S/../e2e/Inputs/attach-loss-mlp.py accuracy %t %t/dp.jsonl | FileCheck %s --check-prefix=REF

// CHECK: eval step 1: loss {{[0-9.]+}}, accuracy {{[0-9.]+}} ({{[0-9]+}}/{{[0-9]+}})
// REF: accuracy matches NumPy
