/* How long each kind of all-reduce call takes in the MPI alone: blocking MPI_Allreduce, non-blocking
 * MPI_Iallreduce completed by an MPI_Test loop, and a persistent request (MPI_Allreduce_init, or Open MPI
 * 4.1's MPIX_Allreduce_init) started and completed the same way. The stream-ordered all-reduce of mpi-build
 * uses the last two (its deadline, its status word and its progress thread need a request to test); the manual
 * pattern uses the first. The loop here tests without pause, where the messenger's wait spins for a bounded
 * time and then parks: these are the MPI's own times, a lower bound for any caller of that kind.
 *
 * usage: mpirun -np N allreduce_kinds REPS ITERATIONS:BYTES[,ITERATIONS:BYTES...]
 * For each size, every kind first runs once unmeasured; then, per repetition, each kind runs ITERATIONS
 * all-reduces (float, sum) after a barrier, the order of the kinds rotating from one repetition to the next
 * (a number of repetitions that is a multiple of the number of kinds puts each kind first equally often); the
 * time is the slowest rank's. After every run of a kind, each rank checks that the sum reached its buffer.
 * Rank 0 prints one line per measurement:
 *   KINDS bytes=B rep=R kind=blocking|nonblocking|persistent iterations=I seconds=S */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5) /* Open MPI 5: MPI_VERSION 3 */
#define PERSISTENT_INIT MPI_Allreduce_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PERSISTENT_INIT MPIX_Allreduce_init
#endif

enum { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *NAMES[] = {"blocking", "nonblocking", "persistent"};

static void wait_by_test(MPI_Request *r) {
  int done = 0;
  while (!done) MPI_Test(r, &done, MPI_STATUS_IGNORE);
}

/* ITERATIONS all-reduces of one kind into a buffer first filled with -1; the slowest rank's seconds (on rank 0).
 * Aborts the job if the sum, EXPECTED, did not reach the buffer's first and last elements. */
static double timed(int kind, int iterations, float *in, float *out, int count, MPI_Request *persistent,
                    float expected) {
  for (int i = 0; i < count; i++) out[i] = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iterations; i++) {
    if (kind == BLOCKING) {
      MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (kind == NONBLOCKING) {
      MPI_Request r;
      MPI_Iallreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
      wait_by_test(&r);
    } else {
      MPI_Start(persistent);
      wait_by_test(persistent);
    }
  }
  double mine = MPI_Wtime() - t0, slowest = 0;
  if (out[0] != expected || out[count - 1] != expected) {
    fprintf(stderr, "allreduce_kinds: %s: sum %f, not %f\n", NAMES[kind], out[0], expected);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char *end = NULL;
  long reps = argc < 3 ? 0 : strtol(argv[1], &end, 10);
  if (argc < 3 || *end != '\0' || reps < 1 || reps > 1000000) {
    if (rank == 0) fprintf(stderr, "usage: allreduce_kinds REPS ITERATIONS:BYTES[,ITERATIONS:BYTES...]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
#ifdef PERSISTENT_INIT
  int kinds = 3;
#else
  int kinds = 2;
#endif
  char *list = strdup(argv[2]);
  for (char *item = strtok(list, ","); item != NULL; item = strtok(NULL, ",")) {
    int iterations = 0, used = 0;
    long long bytes = 0;
    if (sscanf(item, "%d:%lld%n", &iterations, &bytes, &used) != 2 || item[used] != '\0' || iterations < 1
        || bytes < 4 || bytes % 4 != 0 || bytes / 4 > INT_MAX) {
      if (rank == 0) {
        fprintf(stderr, "allreduce_kinds: '%s' is not ITERATIONS:BYTES (bytes a multiple of 4, at most %lld)\n", item,
                4LL * INT_MAX);
      }
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int count = (int)(bytes / 4);
    float *in = malloc((size_t)bytes), *out = malloc((size_t)bytes);
    if (in == NULL || out == NULL) {
      fprintf(stderr, "allreduce_kinds: rank %d: no memory for two buffers of %lld bytes\n", rank, bytes);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < count; i++) in[i] = (float)(rank + 1);
    float expected = (float)size * (float)(size + 1) / 2; /* the sum of rank + 1 over the ranks */
    MPI_Request persistent = MPI_REQUEST_NULL;
#ifdef PERSISTENT_INIT
    PERSISTENT_INIT(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
#endif
    for (int k = 0; k < kinds; k++) timed(k, iterations, in, out, count, &persistent, expected); /* unmeasured */
    for (int rep = 0; rep < (int)reps; rep++) {
      for (int j = 0; j < kinds; j++) {
        int kind = (j + rep) % kinds;
        double s = timed(kind, iterations, in, out, count, &persistent, expected);
        if (rank == 0) {
          printf("KINDS bytes=%lld rep=%d kind=%s iterations=%d seconds=%.6f\n", bytes, rep + 1, NAMES[kind],
                 iterations, s);
        }
      }
    }
#ifdef PERSISTENT_INIT
    MPI_Request_free(&persistent);
#endif
    free(in);
    free(out);
  }
  fflush(stdout);
  free(list);
  MPI_Finalize();
  return 0;
}
