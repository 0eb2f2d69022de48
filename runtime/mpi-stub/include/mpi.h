/*===- mpi.h - A one-process MPI for machines without MPI -----------------===*
 *
 * Part of the GradComm project.
 *
 * GRADCOMM_MPI_STUB=ON builds the runtime against this header and
 * libgradcomm_mpi_stub.so instead of MPICH: one process, rank 0 of 1, so the
 * runtime and the CUDA backend (one-rank NCCL) run on a machine that has
 * CUDA and NCCL but no MPI (the GPU machine of bench/gpu/run.sh). Only what
 * the runtime calls, with MPI's meaning for a group of one: a collective
 * copies its send buffer to its receive buffer, a broadcast does nothing,
 * every request is complete when started. Point-to-point calls to another
 * rank cannot happen (there is none) and fail with MPI_ERR_RANK.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GRADCOMM_MPI_STUB_MPI_H
#define GRADCOMM_MPI_STUB_MPI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Info;
typedef int MPI_Errhandler;
typedef int MPI_Win;
typedef long MPI_Aint;
typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
} MPI_Status;

#define MPI_SUCCESS 0
#define MPI_ERR_ARG 12
#define MPI_ERR_RANK 6
#define MPI_ERR_COMM 5
#define MPI_MAX_ERROR_STRING 512

#define MPI_COMM_NULL 0
#define MPI_COMM_WORLD 1
#define MPI_COMM_SELF 2
#define MPI_INFO_NULL 0
#define MPI_REQUEST_NULL 0
#define MPI_ERRORS_RETURN 1
#define MPI_ERRORS_ARE_FATAL 2
#define MPI_COMM_TYPE_SHARED 1
#define MPI_UNDEFINED (-32766)

#define MPI_KEYVAL_INVALID (-1)

/* Communicator attributes: only MPI_COMM_SELF's delete callbacks matter
   (MPI_Finalize runs them, last set first). */
typedef int MPI_Comm_copy_attr_function(MPI_Comm, int, void *, void *, void *,
                                        int *);
typedef int MPI_Comm_delete_attr_function(MPI_Comm, int, void *, void *);
#define MPI_COMM_NULL_COPY_FN ((MPI_Comm_copy_attr_function *)0)
#define MPI_COMM_NULL_DELETE_FN ((MPI_Comm_delete_attr_function *)0)

#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

/* A datatype's handle is its size in bytes times 16 plus a kind. */
#define MPI_BYTE ((MPI_Datatype)(1 * 16 + 0))
#define MPI_CHAR ((MPI_Datatype)(1 * 16 + 1))
#define MPI_UINT8_T ((MPI_Datatype)(1 * 16 + 8))
#define MPI_UINT16_T ((MPI_Datatype)(2 * 16 + 9))
#define MPI_INT ((MPI_Datatype)(4 * 16 + 2))
#define MPI_INT32_T ((MPI_Datatype)(4 * 16 + 3))
#define MPI_FLOAT ((MPI_Datatype)(4 * 16 + 4))
#define MPI_INT64_T ((MPI_Datatype)(8 * 16 + 5))
#define MPI_UINT64_T ((MPI_Datatype)(8 * 16 + 6))
#define MPI_DOUBLE ((MPI_Datatype)(8 * 16 + 7))

#define MPI_SUM ((MPI_Op)1)
#define MPI_MAX ((MPI_Op)2)
#define MPI_MIN ((MPI_Op)3)
#define MPI_NO_OP ((MPI_Op)4)
#define MPI_REPLACE ((MPI_Op)5)
#define MPI_OP_NULL ((MPI_Op)0)

#define MPI_WIN_NULL 0
#define MPI_LOCK_EXCLUSIVE 234
#define MPI_LOCK_SHARED 235
#define MPI_ANY_SOURCE (-2)
#define MPI_ANY_TAG (-1)

#define MPI_IN_PLACE ((void *)-1)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)

int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalize(void);
int MPI_Finalized(int *flag);
int MPI_Abort(MPI_Comm comm, int code);
double MPI_Wtime(void);
int MPI_Error_string(int code, char *text, int *length);

int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_compare(MPI_Comm a, MPI_Comm b, int *result);
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler handler);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out);
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info,
                        MPI_Comm *out);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy,
                           MPI_Comm_delete_attr_function *destroy, int *keyval,
                           void *extra);
int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void *value);

typedef void MPI_User_function(void *in, void *inout, int *length,
                               MPI_Datatype *type);
/* One process: a user operation is never applied (there is nothing to
   combine), so it is only numbered. */
int MPI_Op_create(MPI_User_function *function, int commute, MPI_Op *op);

int MPI_Bcast(void *buffer, int count, MPI_Datatype type, int root,
              MPI_Comm comm);
int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm);
int MPI_Gather(const void *send, int sendCount, MPI_Datatype sendType,
               void *recv, int recvCount, MPI_Datatype recvType, int root,
               MPI_Comm comm);
int MPI_Gatherv(const void *send, int sendCount, MPI_Datatype sendType,
                void *recv, const int *recvCounts, const int *displacements,
                MPI_Datatype recvType, int root, MPI_Comm comm);
int MPI_Sendrecv(const void *send, int sendCount, MPI_Datatype sendType,
                 int dest, int sendTag, void *recv, int recvCount,
                 MPI_Datatype recvType, int source, int recvTag, MPI_Comm comm,
                 MPI_Status *status);

int MPI_Ibcast(void *buffer, int count, MPI_Datatype type, int root,
               MPI_Comm comm, MPI_Request *request);
int MPI_Iallreduce(const void *send, void *recv, int count, MPI_Datatype type,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request);
int MPI_Ireduce_scatter(const void *send, void *recv, const int *recvCounts,
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        MPI_Request *request);
int MPI_Iallgather(const void *send, int sendCount, MPI_Datatype sendType,
                   void *recv, int recvCount, MPI_Datatype recvType,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Isend(const void *buffer, int count, MPI_Datatype type, int dest,
              int tag, MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *buffer, int count, MPI_Datatype type, int source, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
int MPI_Barrier(MPI_Comm comm);
int MPI_Query_thread(int *provided);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag,
               MPI_Status *status);

/* One-sided: a window of one process; every target is rank 0, itself. */
int MPI_Win_allocate(MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm,
                     void *base, MPI_Win *win);
int MPI_Win_free(MPI_Win *win);
int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler handler);
int MPI_Win_lock(int type, int rank, int assertion, MPI_Win win);
int MPI_Win_unlock(int rank, MPI_Win win);
int MPI_Win_flush(int rank, MPI_Win win);
int MPI_Win_sync(MPI_Win win);
int MPI_Put(const void *origin, int originCount, MPI_Datatype originType,
            int rank, MPI_Aint displacement, int targetCount,
            MPI_Datatype targetType, MPI_Win win);
int MPI_Get(void *origin, int originCount, MPI_Datatype originType, int rank,
            MPI_Aint displacement, int targetCount, MPI_Datatype targetType,
            MPI_Win win);
int MPI_Accumulate(const void *origin, int originCount, MPI_Datatype originType,
                   int rank, MPI_Aint displacement, int targetCount,
                   MPI_Datatype targetType, MPI_Op op, MPI_Win win);
int MPI_Get_accumulate(const void *origin, int originCount,
                       MPI_Datatype originType, void *result, int resultCount,
                       MPI_Datatype resultType, int rank, MPI_Aint displacement,
                       int targetCount, MPI_Datatype targetType, MPI_Op op,
                       MPI_Win win);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRADCOMM_MPI_STUB_MPI_H */
