// Multi-process training on MPI (OpenMPI's mpirun is the launcher). After init(), fit()
// trains across every rank of the job (FitOptions::distributed): each rank takes its
// share of every global batch, gradients are all-reduced, and every rank ends with the
// same weights. Only rank 0 should print or write files; rank() tells a program which
// it is.
//
//   int main(int argc, char** argv) {
//     tandem::mpi::Session mpi(argc, argv);   // MPI_Init_thread ... MPI_Finalize
//     ...
//     model.fit(x, y, {.batch_size = 128, .verbose = tandem::mpi::rank() == 0});
//   }
#pragma once

#include <string>

namespace tandem::mpi {

// Whether this build of tandem has MPI (CMake option TANDEM_WITH_MPI and MPI found).
bool available();
// Whether this process was started by an MPI launcher (mpirun, srun...).
bool launched();
// Initialises MPI (thread level MPI_THREAD_SERIALIZED) once. Without MPI in this build it
// succeeds as a job of one rank, unless the process was launched as one of several ranks
// (a ConfigError then, rather than N unconnected copies training alone).
void init(int& argc, char**& argv);
bool initialized();
// MPI_Finalize, once, if init() initialised MPI.
void finalize();

int rank();  // 0 when not initialised
int size();  // 1 when not initialised
std::string host();
// "rank 1 of 4 on node-b": the prefix of every message a rank prints.
std::string describe();

// How long a collective waits for the other ranks before giving up with a CommError
// (a rank died or hangs). Default 60 s; the CLI's --comm-timeout. MPI cannot recover from
// a lost rank: when a gradient all-reduce timed out, the fit's teardown prints the error
// and ends the job (MPI_Abort, exit code 6) rather than return with MPI half-broken.
void set_timeout(double seconds);
double timeout();

// Ends every rank of the job with this exit code (MPI_Abort); a plain exit without MPI.
[[noreturn]] void abort(int code);

// init() on construction, finalize() on destruction.
class Session {
 public:
  Session(int& argc, char**& argv) { init(argc, argv); }
  ~Session() { finalize(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

}  // namespace tandem::mpi
