// A bad option value of a compile pipeline is a diagnostic naming the
// pipeline and the option, before any pass runs.
// RUN: not pipe-opt %s --pipe-partition-and-schedule=schedule=no-such-kind 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not pipe-opt %s --pipe-partition-and-schedule=partitioner=greedy 2>&1 | FileCheck %s --check-prefix=PARTITIONER
// RUN: not pipe-opt %s --pipe-partition-and-schedule=microbatches=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not pipe-opt %s --pipe-partition-and-schedule=devices=two 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not pipe-opt %s --pipe-partition-and-schedule=async-weights=fresh 2>&1 | FileCheck %s --check-prefix=WEIGHTS
// RUN: not pipe-opt %s --pipe-partition-and-schedule=no-such-option=1 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not pipe-opt %s --pipe-ingest=loss=l1 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not pipe-opt %s --pipe-ingest=loss-reduction=max 2>&1 | FileCheck %s --check-prefix=REDUCTION

// KIND: error: pipe-partition-and-schedule: schedule: 'no-such-kind' is not a schedule kind (1f1b, gpipe,
// PARTITIONER: error: pipe-partition-and-schedule: partitioner: 'greedy' is not a partitioner (
// ZERO: error: pipe-partition-and-schedule: microbatches: must be at least 1
// TYPE: for the --devices option: 'two' value invalid for uint argument!
// WEIGHTS: error: pipe-partition-and-schedule: async-weights: 'fresh' is not one of stash, stale
// OPTION: no-such-option
// LOSS: error: pipe-ingest: loss: 'l1' is not one of cross-entropy, nll, mse
// REDUCTION: error: pipe-ingest: loss-reduction: 'max' is not one of mean, sum
