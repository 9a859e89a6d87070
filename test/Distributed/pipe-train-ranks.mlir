// pipe-train --ranks N compiles once and trains the artifact as N MPI ranks
// (mpirun -np N pipe-runner ... --transport mpi); with --data-parallel R the
// ranks form R replicas. Rank 0 alone prints the progress.
// REQUIRES: mpi
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1 timeout 240 pipe-train --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --steps 3 --eval-every 0 --ranks 2 --artifact %t/a | FileCheck %s
// RUN: env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1 timeout 240 pipe-train --layers 2 --d-model 16 --heads 2 --ff 32 --seq 8 --batch 4 --microbatches 2 -O 0 --steps 3 --eval-every 0 --ranks 4 --data-parallel 2 | FileCheck %s --check-prefix=DP

// CHECK: == compiled in {{.*}}mpirun -np 2 --oversubscribe {{.*}}pipe-runner {{.*}}program.so {{.*}}--transport mpi --data-parallel 1
// CHECK: summary: 3 steps
// CHECK-NOT: summary:
// DP: mpirun -np 4 --oversubscribe {{.*}}--data-parallel 2
// DP: summary: 3 steps
// DP-NOT: summary:
