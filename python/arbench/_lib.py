# SPDX-License-Identifier: MIT
"""Finds and loads libarbench.so (the C API of include/arbench/arbench.h) with ctypes.

Search order: $ARBENCH_LIB (a path to the library), then the -L directory of
`pkg-config --libs arbench`, then the system's library path. The plugins are looked up
in the library's own lib/arbench/ folder unless $ARBENCH_PLUGIN_PATH says otherwise, so a
relocated install (a --destdir, a wheel) finds them.
"""
import ctypes
import ctypes.util
import os
import shutil
import subprocess

API_VERSION_MAJOR = 1

OK, ERR_DECLINE, ERR_INVALID, ERR_SYSTEM, ERR_TIMEOUT = 0, 1, 2, 3, 4
BF16, FP32 = 0, 1
OP_ALLREDUCE, OP_ALLREDUCE_RMSNORM = 0, 1
NCCL_UNIQUE_ID_BYTES = 128

# int allgather(void *ctx, const void *send, void *recv, size_t bytes) (arbench.h, API 1.1)
ALLGATHER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


class ArbenchError(RuntimeError):
    """A call of libarbench failed; .status is the arbench_status_t."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Config(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("profile", ctypes.c_char_p),
        ("fabric", ctypes.c_char_p),
        ("cuda_device", ctypes.c_int),
        ("graph", ctypes.c_int),
        ("max_bytes", ctypes.c_size_t),
        ("max_tokens", ctypes.c_uint),
        ("hidden", ctypes.c_uint),
        ("fallback", ctypes.c_char_p),
    ]


def _candidates():
    env = os.environ.get("ARBENCH_LIB")
    if env:
        yield env
        return
    if shutil.which("pkg-config"):
        try:
            out = subprocess.run(["pkg-config", "--libs-only-L", "arbench"], capture_output=True, text=True,
                                 check=True).stdout.split()
            for flag in out:
                yield os.path.join(flag[2:], "libarbench.so")
        except (OSError, subprocess.CalledProcessError):
            pass
    found = ctypes.util.find_library("arbench")
    if found:
        yield found


def _declare(lib):
    c_size, c_char, vp = ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p
    lib.arbench_api_version.restype = ctypes.c_int
    lib.arbench_config_init.argtypes = [ctypes.POINTER(Config)]
    lib.arbench_comm_create.argtypes = [ctypes.POINTER(Config), ctypes.POINTER(vp), c_char, c_size]
    lib.arbench_comm_rank.argtypes = [vp]
    lib.arbench_comm_size.argtypes = [vp]
    lib.arbench_allreduce.argtypes = [vp, vp, c_size, ctypes.c_int, vp, c_char, c_size]
    lib.arbench_allreduce_rmsnorm.argtypes = [vp, vp, vp, vp, vp, ctypes.c_uint, ctypes.c_uint, ctypes.c_float, vp,
                                              c_char, c_size]
    lib.arbench_explain.argtypes = [vp, ctypes.c_int, c_size, ctypes.c_int, c_char, c_size]
    lib.arbench_explain.restype = c_char
    lib.arbench_comm_destroy.argtypes = [vp]
    if lib.arbench_api_version() >= 10100:
        lib.arbench_comm_create_allgather.argtypes = [ctypes.POINTER(Config), ctypes.c_int, ctypes.c_int, ALLGATHER_FN,
                                                      vp, ctypes.POINTER(vp), c_char, c_size]
        lib.arbench_nccl_unique_id.argtypes = [vp, c_size, c_char, c_size]
        lib.arbench_comm_create_nccl_id.argtypes = [ctypes.POINTER(Config), ctypes.c_int, ctypes.c_int, vp, c_size,
                                                    ctypes.POINTER(vp), c_char, c_size]
        lib.arbench_comm_create_nccl.argtypes = [ctypes.POINTER(Config), vp, ctypes.POINTER(vp), c_char, c_size]
        lib.arbench_register.argtypes = [vp, vp, c_size, c_char, c_size]
        lib.arbench_deregister.argtypes = [vp, vp, c_char, c_size]
    return lib


def need(lib, version, what):
    """ARBENCH_ERR_INVALID unless the loaded library is at least `version`."""
    if lib.arbench_api_version() < version:
        raise ArbenchError(ERR_INVALID, "%s needs libarbench API %d or later; the loaded one is %d"
                           % (what, version, lib.arbench_api_version()))


_lib = None


def load():
    """The loaded library (once per process). RTLD_GLOBAL: Open MPI's components need
    libmpi's symbols, which a library loaded privately would hide from them."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        plugins = os.path.join(os.path.dirname(os.path.realpath(path)), "arbench")
        if os.path.isdir(plugins):
            os.environ.setdefault("ARBENCH_PLUGIN_PATH", plugins)
        _lib = _declare(lib)
        version = _lib.arbench_api_version()
        if version // 10000 != API_VERSION_MAJOR:
            _lib = None
            raise ArbenchError(ERR_INVALID, "%s: API version %d, this binding needs major version %d"
                               % (path, version, API_VERSION_MAJOR))
        return _lib
    raise ArbenchError(ERR_INVALID, "libarbench.so not found: set ARBENCH_LIB=/path/to/libarbench.so or install "
                       "arbench (meson install) where pkg-config finds arbench.pc; tried: %s"
                       % ("; ".join(tried) or "nothing (no ARBENCH_LIB, no pkg-config arbench, not on the library path)"))


def check(status, why, what):
    if status != OK:
        raise ArbenchError(status, "%s: %s" % (what, why.value.decode(errors="replace")))
