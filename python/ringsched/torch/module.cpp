// SPDX-License-Identifier: GPL-2.0-or-later
// ringsched.torch._ringrt: the C++ half of ringsched.torch. It binds the "ringrt" process group
// (process_group.h) and ringrun's checkpoint store (wrapper/checkpoint.h), so that a PyTorch
// job's checkpoints are written and verified by the same code as ringrun's own: ringrun checks
// the file the workers leave before it restarts them. See ringsched-torch(3).
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <string>
#include <vector>

#include "checkpoint.h"
#include "process_group.h"

namespace py = pybind11;
using ringsched_torch::ProcessGroupRingrt;

namespace {

// A CheckpointError becomes ringsched.torch.CheckpointError (a ValueError) naming the file.
PyObject* g_checkpoint_error = nullptr;

py::bytes to_bytes(const std::vector<uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

ProcessGroupRingrt& live_group() {
  ProcessGroupRingrt* pg = ProcessGroupRingrt::current();
  TORCH_CHECK(pg, "ringrt backend: no \"ringrt\" process group in this process (init_process_group(\"ringrt\") first)");
  return *pg;
}

}  // namespace

PYBIND11_MODULE(_ringrt, m) {
  m.doc() = "libringrt as a torch.distributed backend, and ringrun's checkpoint store";
  // The base class is bound by torch; importing it first lets pybind11 find it.
  py::module::import("torch.distributed");

  py::class_<ProcessGroupRingrt, ringsched_torch::RingrtBase, c10::intrusive_ptr<ProcessGroupRingrt>>(
      m, "ProcessGroupRingrt")
      .def(py::init([](int rank, int size) { return c10::make_intrusive<ProcessGroupRingrt>(rank, size); }),
           py::arg("rank"), py::arg("size"), py::call_guard<py::gil_scoped_release>());

  m.attr("TORCH_API") = TORCH_VERSION_MAJOR >= 2 ? "c10d::Backend (torch 2.x)" : "c10d::ProcessGroup (torch 1.x)";

  m.def(
      "spb_allreduce",
      [](std::vector<at::Tensor> buckets, std::vector<int> depth) {
        live_group().spb_allreduce(buckets, depth);
      },
      py::arg("buckets"), py::arg("depth"), py::call_guard<py::gil_scoped_release>(),
      "Average each bucket (backprop order) over the ranks whose depth reaches it.");
  m.def(
      "traffic",
      []() {
        ringsched_torch::Traffic t;
        {
          py::gil_scoped_release nogil;
          t = live_group().traffic();
        }
        py::dict d;
        d["allreduce_calls"] = t.allreduce_calls;
        d["allreduce_bytes"] = t.allreduce_bytes;
        d["spb_calls"] = t.spb_calls;
        d["spb_bytes"] = t.spb_bytes;
        d["broadcast_calls"] = t.broadcast_calls;
        d["broadcast_bytes"] = t.broadcast_bytes;
        return d;
      },
      "Bytes handed to libringrt by this process, by kind of call.");
  m.def(
      "transport", []() { return live_group().backend_name(); }, py::call_guard<py::gil_scoped_release>(),
      "libringrt's backend for host buffers: tcp, shm or hier.");

  // --- ringrun's checkpoint store ---
  static py::exception<ringrun::CheckpointError> checkpoint_error(m, "CheckpointError", PyExc_ValueError);
  g_checkpoint_error = checkpoint_error.ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ringrun::CheckpointError& e) {
      PyErr_SetString(g_checkpoint_error, e.what());
    }
  });
  m.def(
      "checkpoint_write",
      [](const std::string& dir, uint64_t step, const py::bytes& payload) {
        std::string data = payload;
        std::vector<uint8_t> bytes(data.begin(), data.end());
        py::gil_scoped_release nogil;
        return ringrun::CheckpointStore(dir).write(step, bytes);
      },
      py::arg("dir"), py::arg("step"), py::arg("payload"),
      "Atomically write step's checkpoint into dir (created 0700); returns its path.");
  m.def(
      "checkpoint_files", [](const std::string& dir) { return ringrun::CheckpointStore(dir).files(); },
      py::arg("dir"), "Checkpoint files of dir, newest first.");
  m.def(
      "checkpoint_read",
      [](const std::string& dir, const std::string& path) {
        ringrun::Checkpoint c;
        {
          py::gil_scoped_release nogil;
          c = ringrun::CheckpointStore(dir).read_file(path);
        }
        return py::make_tuple(c.step, to_bytes(c.payload));
      },
      py::arg("dir"), py::arg("path"),
      "Read and verify one checkpoint file of dir's store: (step, payload); CheckpointError names what is wrong.");
}
