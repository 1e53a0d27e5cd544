// SPDX-License-Identifier: GPL-2.0-or-later
/* mpi_allreduce_bench -- OpenMPI's MPI_Allreduce measured exactly as ringrt-bench measures
 * libringrt: float32 sum in place, per size the median over iterations (each after a barrier) of
 * the slowest rank's time; algbw = S/t, busbw = algbw * 2(n-1)/n. Run by compare-allreduce.sh
 * under mpirun with the shared-memory (vader) or the TCP BTL. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t minb = 4096, maxb = (size_t)256 << 20;
  const char* label = "?";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--min-bytes") && i + 1 < argc) minb = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) maxb = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
  }
  float* buf = malloc(maxb);
  double* times = malloc(200 * sizeof(double));
  memset(buf, 0, maxb);
  if (rank == 0) {
    printf("# OpenMPI MPI_Allreduce (%s): %d ranks, float32 sum, median of iterations\n", label, n);
    printf("# %12s %12s %12s %12s %12s %6s\n", "size(B)", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "iters");
    fflush(stdout);
  }
  for (size_t bytes = minb; bytes <= maxb; bytes *= 4) {
    int count = (int)(bytes / 4);
    size_t it_target = ((size_t)256 << 20) / bytes;
    int iters = it_target < 5 ? 5 : it_target > 100 ? 100 : (int)it_target;
    int warm = bytes >= ((size_t)64 << 20) ? 1 : 3;
    int k = 0;
    for (int it = 0; it < warm + iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t1 = MPI_Wtime();
      if (it >= warm) times[k++] = t1 - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, times, k, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(times, k, sizeof(double), cmp);
    double med = k % 2 ? times[k / 2] : 0.5 * (times[k / 2 - 1] + times[k / 2]);
    double algbw = bytes / med / 1e9;
    if (rank == 0) {
      printf("  %12zu %12d %12.1f %12.3f %12.3f %6d\n", bytes, count, med * 1e6, algbw, algbw * 2.0 * (n - 1) / n, iters);
      fflush(stdout);
    }
  }
  free(buf);
  free(times);
  MPI_Finalize();
  return 0;
}
