/* The few MPI calls s3hpc bench needs, behind a plain C ABI (no MPI types cross it), so the Rust
 * side needs no bindgen and works with any MPI implementation's mpi.h. Every function returns 0
 * on success or the MPI error code. Buffers are byte buffers; lengths are 64-bit on the Rust side
 * and must fit an int per rank here (checked). */
#include <mpi.h>
#include <limits.h>
#include <stdlib.h>

int s3hpc_mpi_init(int *rank, int *size) {
    int flag = 0, provided = 0, rc;
    MPI_Initialized(&flag);
    if (!flag) {
        /* Only the thread that initialised MPI calls it (a dedicated thread on the Rust side). */
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return rc;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (rc != MPI_SUCCESS) return rc;
    return MPI_Comm_size(MPI_COMM_WORLD, size);
}

int s3hpc_mpi_finalize(void) {
    int flag = 0;
    MPI_Finalized(&flag);
    return flag ? 0 : MPI_Finalize();
}

int s3hpc_mpi_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

int s3hpc_mpi_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

/* Broadcast `len` bytes from `root` (every rank passes the same len; see the Rust side). */
int s3hpc_mpi_bcast(void *buf, long long len, int root) {
    if (len < 0 || len > INT_MAX) return -1;
    return MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
}

/* Every rank's `mine` into `all[size]`. */
int s3hpc_mpi_allgather_len(long long mine, long long *all) {
    return MPI_Allgather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
}

/* Variable-length allgather: `lens[size]` from s3hpc_mpi_allgather_len, `out` holds their sum. */
int s3hpc_mpi_allgatherv(const void *mine, long long len, void *out, const long long *lens, int size) {
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size), rc;
    long long off = 0;
    if (!counts || !displs) { free(counts); free(displs); return -1; }
    for (int i = 0; i < size; i++) {
        if (lens[i] < 0 || lens[i] > INT_MAX || off > INT_MAX) { free(counts); free(displs); return -1; }
        counts[i] = (int)lens[i];
        displs[i] = (int)off;
        off += lens[i];
    }
    rc = MPI_Allgatherv(mine, (int)len, MPI_BYTE, out, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return rc;
}

/* Variable-length gather to `root`: only root's `out` is written (lens valid on every rank). */
int s3hpc_mpi_gatherv(const void *mine, long long len, void *out, const long long *lens, int size, int root) {
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size), rc;
    long long off = 0;
    if (!counts || !displs) { free(counts); free(displs); return -1; }
    for (int i = 0; i < size; i++) {
        if (lens[i] < 0 || lens[i] > INT_MAX || off > INT_MAX) { free(counts); free(displs); return -1; }
        counts[i] = (int)lens[i];
        displs[i] = (int)off;
        off += lens[i];
    }
    rc = MPI_Gatherv(mine, (int)len, MPI_BYTE, out, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return rc;
}
