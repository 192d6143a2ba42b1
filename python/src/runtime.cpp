// Process-wide settings (seed, threads, denormals) and MPI. A program started by mpirun
// initialises MPI on import, so `mpirun -np 2 python train.py` trains across both ranks with
// no other change; tandem/__init__.py registers finalize() with atexit.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "tandem/config.h"
#include "tandem/mpi.h"

namespace tandem::python {

void bind_runtime(nb::module_& m) {
  m.def("set_random_seed", &set_random_seed, nb::arg("seed"));
  m.def("set_num_threads", &set_num_threads, nb::arg("threads"));
  m.def("num_threads", &num_threads);
  m.def("set_flush_denormals", &set_flush_denormals, nb::arg("flush"));
  m.def("flush_denormals", &flush_denormals);

  nb::module_ mpi = m.def_submodule("mpi", "Multi-process training on MPI");
  mpi.def("available", &mpi::available);
  mpi.def("launched", &mpi::launched);
  mpi.def("init", [] {
    int argc = 1;
    static char program[] = "python";
    static char* args[] = {program, nullptr};
    char** argv = args;
    mpi::init(argc, argv);
  });
  mpi.def("initialized", &mpi::initialized);
  mpi.def("finalize", &mpi::finalize);
  mpi.def("rank", &mpi::rank);
  mpi.def("size", &mpi::size);
  mpi.def("host", &mpi::host);
  mpi.def("describe", &mpi::describe);
  mpi.def("set_timeout", &mpi::set_timeout, nb::arg("seconds"));
}

}  // namespace tandem::python
