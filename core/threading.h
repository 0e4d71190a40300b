#pragma once
// One scheduler owns the cores: TBB. OpenBLAS is pinned to one thread and called from TBB tasks,
// because OpenBLAS's own threads fight TBB's for the same 2 cores (measured here: skinny conv
// GEMMs run slower at 2 OpenBLAS threads than at 1).
namespace tunecnn {

void set_num_threads(int threads);  // 0 = all hardware threads
int num_threads();                  // the current TBB limit

}  // namespace tunecnn
