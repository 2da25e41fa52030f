"""A DLPack producer written with ctypes: legacy "dltensor" capsules over a
NumPy array's memory with any device type, dtype code and strides, so the
tests can hand fmhajit what NumPy itself would never export."""

import ctypes

import numpy as np


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

_CODES = {"f": 2, "u": 1, "i": 0}  # kDLFloat, kDLUInt, kDLInt


# Every Capsule made: the capsule points into its ctypes structures and
# calls its deleter, so none may be freed while fmhajit could still read it.
_ALIVE = []


class Capsule:
    """A capsule over array; .deleted counts calls of its deleter."""

    def __init__(self, array, device_type=1, strides=None, shape=None):
        _ALIVE.append(self)
        self.array = array  # keeps the memory alive
        self.deleted = 0
        shape = array.shape if shape is None else shape
        strides = [s // array.itemsize for s in array.strides] if strides is None else strides
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides)
        self.deleter = DELETER(self._delete)
        t = DLTensor(array.ctypes.data, DLDevice(device_type, 0), len(shape),
                     DLDataType(_CODES[array.dtype.kind], array.dtype.itemsize * 8, 1),
                     self.shape, self.strides, 0)
        self.managed = DLManagedTensor(t, None, self.deleter)
        self.capsule = _new_capsule(ctypes.addressof(self.managed), b"dltensor", None)

    def _delete(self, _):
        self.deleted += 1


class Producer:
    """An array object of the DLPack protocol (neither NumPy nor torch)."""

    def __init__(self, array, device_type=1):
        self.array = array
        self.device_type = device_type
        self.capsules = []

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, stream=None):
        self.capsules.append(Capsule(self.array, self.device_type))
        return self.capsules[-1].capsule

    @property
    def shape(self):
        return self.array.shape
