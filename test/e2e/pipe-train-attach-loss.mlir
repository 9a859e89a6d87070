// pipe-train --loss on an inference MLP (hand-written linalg-on-tensors
// returning (hidden, logits)): each loss kind and reduction trains 3 steps
// and its first loss equals PyTorch's on the same weights and data within
// 1e-4 (Inputs/attach-loss-mlp.py).
// RUN: rm -rf %t && mkdir -p %t/ce %t/nll %t/mse
// RUN: %python %S/Inputs/attach-loss-mlp.py make %t/ce cross-entropy
// RUN: %python %S/Inputs/attach-loss-mlp.py make %t/nll nll
// RUN: %python %S/Inputs/attach-loss-mlp.py make %t/mse mse
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --devices 1 --data %t/ce/data.safetensors --steps 3 --log-every 1 --log-json %t/ce/mean.jsonl | FileCheck %s
// RUN: %python %S/Inputs/attach-loss-mlp.py check %t/ce cross-entropy mean %t/ce/mean.jsonl 4 | FileCheck %s --check-prefix=REF
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-reduction sum --loss-result 1 --devices 1 --data %t/ce/data.safetensors --steps 3 --log-every 1 --log-json %t/ce/sum.jsonl | FileCheck %s
// RUN: %python %S/Inputs/attach-loss-mlp.py check %t/ce cross-entropy sum %t/ce/sum.jsonl 4 | FileCheck %s --check-prefix=REF
// RUN: pipe-train %t/nll/model.mlir --loss nll --loss-result 1 --devices 1 --data %t/nll/data.safetensors --steps 3 --log-every 1 --log-json %t/nll/mean.jsonl | FileCheck %s
// RUN: %python %S/Inputs/attach-loss-mlp.py check %t/nll nll mean %t/nll/mean.jsonl 4 | FileCheck %s --check-prefix=REF
// RUN: pipe-train %t/mse/model.mlir --loss mse --loss-result 1 --devices 1 --data %t/mse/data.safetensors --steps 3 --log-every 1 --log-json %t/mse/mean.jsonl | FileCheck %s
// RUN: %python %S/Inputs/attach-loss-mlp.py check %t/mse mse mean %t/mse/mean.jsonl 4 | FileCheck %s --check-prefix=REF
// RUN: pipe-train %t/mse/model.mlir --loss mse --loss-reduction sum --loss-result 1 --devices 1 --data %t/mse/data.safetensors --steps 3 --log-every 1 --log-json %t/mse/sum.jsonl | FileCheck %s
// RUN: %python %S/Inputs/attach-loss-mlp.py check %t/mse mse sum %t/mse/sum.jsonl 4 | FileCheck %s --check-prefix=REF

// --metric accuracy: the evaluation's accuracy of the initial weights (--lr 0)
// equals NumPy's count, on one device, across a 2-device pipeline, with 2
// in-process replicas, and with nll; the log and the summary carry it.
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --metric accuracy --devices 1 --data %t/ce/data.safetensors --steps 1 --eval-every 1 --lr 0 --min-lr 0 --log-json %t/ce/acc1.jsonl | FileCheck %s --check-prefix=ACC
// RUN: %python %S/Inputs/attach-loss-mlp.py accuracy %t/ce %t/ce/acc1.jsonl | FileCheck %s --check-prefix=ACCREF
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --metric accuracy --devices 2 --granularity op --microbatches 2 --batch 8 --data %t/ce/data.safetensors --steps 1 --eval-every 1 --lr 0 --min-lr 0 --log-json %t/ce/acc2.jsonl | FileCheck %s --check-prefix=ACC
// RUN: %python %S/Inputs/attach-loss-mlp.py accuracy %t/ce %t/ce/acc2.jsonl | FileCheck %s --check-prefix=ACCREF
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --metric accuracy --devices 1 --data-parallel 2 --data %t/ce/data.safetensors --steps 1 --eval-every 1 --lr 0 --min-lr 0 --log-json %t/ce/acc-dp.jsonl | FileCheck %s --check-prefix=ACC
// RUN: %python %S/Inputs/attach-loss-mlp.py accuracy %t/ce %t/ce/acc-dp.jsonl | FileCheck %s --check-prefix=ACCREF
// RUN: pipe-train %t/nll/model.mlir --loss nll --loss-result 1 --metric accuracy --devices 1 --data %t/nll/data.safetensors --steps 1 --eval-every 1 --lr 0 --min-lr 0 --log-json %t/nll/acc.jsonl | FileCheck %s --check-prefix=ACC
// RUN: %python %S/Inputs/attach-loss-mlp.py accuracy %t/nll %t/nll/acc.jsonl | FileCheck %s --check-prefix=ACCREF
// The compiled artifact carries the metric (a manifest `metric` record):
// pipe-runner reports the same accuracy.
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --metric accuracy --devices 1 --artifact %t/ce/art --compile-only > /dev/null
// RUN: pipe-runner %t/ce/art/program.so --weights %t/ce/art/weights.safetensors --data %t/ce/data.safetensors --steps 1 --eval-every 1 --lr 0 --log-json %t/ce/acc-runner.jsonl | FileCheck %s --check-prefix=ACC
// RUN: %python %S/Inputs/attach-loss-mlp.py accuracy %t/ce %t/ce/acc-runner.jsonl | FileCheck %s --check-prefix=ACCREF
// --metric needs a loss of class scores.
// RUN: %expect_error --exit 2 -- pipe-train %t/ce/model.mlir --metric accuracy 2>&1 | FileCheck %s --check-prefix=METNOLOSS
// RUN: %expect_error --exit 2 -- pipe-train %t/mse/model.mlir --loss mse --loss-result 1 --metric accuracy --devices 1 --data %t/mse/data.safetensors 2>&1 | FileCheck %s --check-prefix=METMSE
// RUN: %expect_error --exit 2 -- pipe-train %t/ce/model.mlir --loss nll --metric top5 2>&1 | FileCheck %s --check-prefix=METBAD
// ACC: eval step 1: loss {{[0-9.]+}}, accuracy {{[0-9.]+}} ({{[0-9]+}}/{{[0-9]+}})
// ACC: eval accuracy:
// ACCREF: accuracy matches NumPy ({{[0-9]+}} of 15)
// METNOLOSS: pipe-train: --metric needs an attached loss of class scores (--loss cross-entropy or nll, or --classes)
// METMSE: metrics: accuracy needs an attached loss of class scores (loss=cross-entropy or nll)
// METBAD: pipe-train: --metric wants one of accuracy; got 'top5'

// Without --loss the export stops at differentiation, naming the option.
// RUN: %expect_error --exit 1 -- pipe-train %t/ce/model.mlir --devices 1 --data %t/ce/data.safetensors --steps 3 2>&1 | FileCheck %s --check-prefix=NOLOSS
// Bad values are command-line errors naming the flag.
// RUN: %expect_error --exit 2 -- pipe-train %t/ce/model.mlir --loss hinge 2>&1 | FileCheck %s --check-prefix=BADKIND
// RUN: %expect_error --exit 2 -- pipe-train %t/ce/model.mlir --loss mse --loss-reduction none 2>&1 | FileCheck %s --check-prefix=BADRED
// RUN: %expect_error --exit 2 -- pipe-train %t/ce/model.mlir --loss mse --loss-result -1 2>&1 | FileCheck %s --check-prefix=BADRES
// RUN: %expect_error --exit 2 -- pipe-train --loss mse 2>&1 | FileCheck %s --check-prefix=NOMODEL
// RUN: %expect_error --exit 2 -- pipe-train %t/ce/model.mlir --loss 2>&1 | FileCheck %s --check-prefix=NOVALUE
// A result index past the function's results names the function.
// RUN: %expect_error --exit 1 -- pipe-train %t/ce/model.mlir --loss mse --loss-result 2 --devices 1 --data %t/ce/data.safetensors 2>&1 | FileCheck %s --check-prefix=RANGE

// The targets are bounded by the class count (5; -100 is ignored), checked
// in the data before training: the last valid class trains, the values just
// outside and the extremes are errors naming the tensor and element.
// RUN: %python -c "for v in (4, 5, -1, -101, 2**63 - 1, -2**63): print(v)" > %t/values
// RUN: for v in $(cat %t/values); do %python %S/Inputs/attach-loss-mlp.py target %t/ce $v; done
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --devices 1 --data %t/ce/target-4.safetensors --steps 1 | FileCheck %s --check-prefix=VALID
// RUN: for v in $(tail -n +2 %t/values); do %expect_error --exit 1 -- pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --devices 1 --data %t/ce/target-$v.safetensors --steps 1 2>&1; done | FileCheck %s --check-prefix=TARGET

// A micro-batch whose targets are all ignored contributes 0 (it was 0/0, a
// NaN loss that ended the run as "diverged").
// RUN: %python %S/Inputs/attach-loss-mlp.py target %t/ce ignored-row
// RUN: pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --devices 1 --data %t/ce/target-ignored-row.safetensors --steps 3 --log-every 1 --log-json %t/ce/ignored.jsonl | FileCheck %s
// RUN: %python %S/Inputs/attach-loss-mlp.py check %t/ce cross-entropy-ignored-row mean %t/ce/ignored.jsonl 4 | FileCheck %s --check-prefix=REF
// Data whose targets are all ignored would count nothing (a loss of 0 that
// says nothing): an error naming the tensor.
// RUN: %python %S/Inputs/attach-loss-mlp.py target %t/ce ignored-all
// RUN: %expect_error --exit 1 -- pipe-train %t/ce/model.mlir --loss cross-entropy --loss-result 1 --devices 1 --data %t/ce/target-ignored-all.safetensors --steps 1 2>&1 | FileCheck %s --check-prefix=ALL-IGNORED
// ALL-IGNORED: target-ignored-all.safetensors: tensor 'input1': every value is -100, which the program's input 1 ignores: nothing in it would be counted

// CHECK: step 3/3  loss
// VALID: step 1/1  loss
// TARGET: target-5.safetensors: tensor 'input1' row 1 element 3: value 5 is outside the range [0, 5) or -100 of the program's input 1
// TARGET: target--1.safetensors: tensor 'input1' row 1 element 3: value -1 is outside
// TARGET: target--101.safetensors: tensor 'input1' row 1 element 3: value -101 is outside
// TARGET: target-9223372036854775807.safetensors: tensor 'input1' row 1 element 3: value 9223372036854775807 is outside
// TARGET: target--9223372036854775808.safetensors: tensor 'input1' row 1 element 3: value -9223372036854775808 is outside
// REF: loss matches PyTorch
// NOLOSS: model.mlir:{{[0-9]+}}:{{[0-9]+}}: error: {{.*}}must return a scalar float loss {{.*}}--pipe-attach-loss (pipe-train --loss)
// BADKIND: pipe-train: --loss wants one of cross-entropy, nll, mse; got 'hinge'
// BADRED: pipe-train: --loss-reduction wants one of mean, sum; got 'none'
// BADRES: pipe-train: --loss-result wants an integer in [0, 4096], got '-1'
// NOMODEL: pipe-train: --loss applies to a MODEL.mlir
// NOVALUE: pipe-train: --loss needs a value
// RANGE: model.mlir:4:3: error: 'func.func' op pipe-attach-loss: result 2 is out of range: @forward has 2 results
