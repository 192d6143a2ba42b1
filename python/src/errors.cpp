// tandem's typed errors as Python exceptions of the matching built-in kind, each a subclass
// a Keras program already catches: shapes and arguments -> ValueError, a missing file ->
// FileNotFoundError, an unreadable or corrupt file -> OSError, a failing library or rank ->
// RuntimeError, numbers gone wrong -> FloatingPointError. The C++ message is kept whole.
#include <filesystem>
#include <new>

#include "bindings.h"
#include "callback_errors.h"
#include "tandem/error.h"

namespace tandem::python {
namespace {

PyObject* make_type(nb::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("tandem.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

struct ErrorTypes {
  PyObject* error;      // tandem.Error(Exception): every tandem error
  PyObject* shape;      // ShapeError(Error, ValueError)
  PyObject* config;     // ConfigError(Error, ValueError)
  PyObject* io;         // IoError(Error, OSError)
  PyObject* not_found;  // FileNotFoundError(IoError, builtins.FileNotFoundError)
  PyObject* format;     // FormatError(Error, OSError)
  PyObject* backend;    // BackendError(Error, RuntimeError)
  PyObject* comm;       // CommError(Error, RuntimeError)
  PyObject* numeric;    // NumericError(Error, FloatingPointError)
};
ErrorTypes types;

PyObject* bases(std::initializer_list<PyObject*> list) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(list.size()));
  Py_ssize_t i = 0;
  for (PyObject* base : list) {
    Py_INCREF(base);
    PyTuple_SET_ITEM(tuple, i++, base);
  }
  return tuple;
}

void set_io_error(const IoError& e) {
  std::error_code ec;
  const bool missing = !e.path().empty() && !std::filesystem::exists(e.path(), ec);
  PyObject* type = missing ? types.not_found : types.io;
  // OSError(errno, strerror, filename): e.errno and e.filename as Python code expects them.
  nb::object args =
      nb::make_tuple(missing ? ENOENT : EIO, nb::str(e.what()), nb::str(e.path().c_str()));
  PyErr_SetObject(type, args.ptr());
}

}  // namespace

void bind_errors(nb::module_& m) {
  types.error = make_type(m, "Error", PyExc_Exception, "Every error tandem raises.");
  types.shape = make_type(m, "ShapeError", bases({types.error, PyExc_ValueError}),
                          "Shapes that do not fit: model vs data, layer inputs, weights.");
  types.config = make_type(m, "ConfigError", bases({types.error, PyExc_ValueError}),
                           "A bad argument or name.");
  types.io = make_type(m, "IoError", bases({types.error, PyExc_OSError}),
                       "A file could not be opened, read or written.");
  types.not_found = make_type(m, "FileNotFoundError", bases({types.io, PyExc_FileNotFoundError}),
                              "A file tandem was asked to read does not exist.");
  types.format = make_type(m, "FormatError", bases({types.error, PyExc_OSError}),
                           "A file was read but its content is wrong (magic, size, checksum).");
  types.backend = make_type(m, "BackendError", bases({types.error, PyExc_RuntimeError}),
                            "A failure inside a library tandem calls (oneDNN, MPI, zlib).");
  types.comm = make_type(m, "CommError", bases({types.error, PyExc_RuntimeError}),
                         "Another rank of a multi-process job died, hung or disagreed.");

  types.numeric = make_type(m, "NumericError", bases({types.error, PyExc_FloatingPointError}),
                            "A loss that became NaN or infinite, weights that hold NaN.");

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const CallbackRaised&) {
      restore_callback_error();
    } catch (const ShapeError& e) {
      PyErr_SetString(types.shape, e.what());
    } catch (const ConfigError& e) {
      PyErr_SetString(types.config, e.what());
    } catch (const IoError& e) {
      set_io_error(e);
    } catch (const FormatError& e) {
      PyErr_SetString(types.format, e.what());
    } catch (const BackendError& e) {
      PyErr_SetString(types.backend, e.what());
    } catch (const CommError& e) {
      PyErr_SetString(types.comm, e.what());
    } catch (const NumericError& e) {
      PyErr_SetString(types.numeric, e.what());
    } catch (const Error& e) {
      PyErr_SetString(types.error, e.what());
    } catch (const std::bad_alloc& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });
}

}  // namespace tandem::python
