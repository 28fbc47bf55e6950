/* Stand-in for stylegan2_train in tests/slurm/local_slurm.sh: proves that a launcher (srun or
 * mpirun inside a Slurm job) wires up an MPI world, and that a stop signal reaches the ranks.
 *
 *   mpi_hello [--expect-size N] [--until-signal [--stop-seconds S]] [anything else: echoed, ignored]
 *
 * Every rank prints one line with its rank, the world size and the result of an MPI_Allreduce.
 * --until-signal: then wait (at most 60 s) for SIGTERM/SIGINT on any rank; like the trainer, the
 * ranks agree on the stop through a collective and all exit with 128 + the signal.
 * --stop-seconds S: take S seconds to stop (as the trainer writing its snapshot), then say so.
 * Exit status: 0 when every rank saw the expected world size and sum, 1 otherwise, 2 when no
 * signal came within the bound, 128 + signal after a stop. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_signal = 0;

static void on_stop(int sig) { stop_signal = sig; }

static int wait_for_stop(int rank, double stop_seconds) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    printf("mpi_hello rank %d waiting for a stop signal\n", rank);
    fflush(stdout);

    const struct timespec tick = {0, 50 * 1000 * 1000};
    for (int i = 0; i < 60 * 20; ++i) {
        int mine = stop_signal, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any != 0) {
            printf("mpi_hello rank %d stopping on signal %d\n", rank, any);
            fflush(stdout);
            const struct timespec pause = {(time_t)stop_seconds, (long)((stop_seconds - (time_t)stop_seconds) * 1e9)};
            nanosleep(&pause, NULL);
            printf("mpi_hello rank %d stopped after %.1f s\n", rank, stop_seconds);
            fflush(stdout);
            return 128 + any;
        }
        nanosleep(&tick, NULL);
    }
    printf("mpi_hello rank %d: no stop signal within 60 s\n", rank);
    return 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0, len = 0;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);

    int expect_size = 0, until_signal = 0;
    double stop_seconds = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--expect-size") == 0 && i + 1 < argc) expect_size = atoi(argv[++i]);
        else if (strcmp(argv[i], "--until-signal") == 0) until_signal = 1;
        else if (strcmp(argv[i], "--stop-seconds") == 0 && i + 1 < argc) stop_seconds = atof(argv[++i]);
    }
    if (rank == 0) {
        printf("mpi_hello argv:");
        for (int i = 1; i < argc; ++i) printf(" %s", argv[i]);
        printf("\n");
    }

    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const long want = (long)size * (size + 1) / 2;
    int ok = sum == want && (expect_size == 0 || size == expect_size);
    printf("mpi_hello rank %d of %d on %s: allreduce %ld (want %ld) %s\n", rank, size, host, sum, want,
           ok ? "ok" : "WRONG");
    fflush(stdout);

    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int status = all_ok ? 0 : 1;
    if (status == 0 && until_signal) status = wait_for_stop(rank, stop_seconds);
    MPI_Finalize();
    return status;
}
