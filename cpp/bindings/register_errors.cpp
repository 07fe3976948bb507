#include "bindings.hpp"

void register_errors(py::module_& m) {
    (void)m;
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const roofline::NotFound& e) {
            PyErr_SetString(PyExc_KeyError, e.what());
        } catch (const roofline::FileError& e) {
            PyErr_SetString(PyExc_FileNotFoundError, e.what());
        } catch (const roofline::InvalidArgument& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const roofline::Error& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what());
        }
    });
}
