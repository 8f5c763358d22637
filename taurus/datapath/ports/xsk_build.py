"""Placeholder cffi builder (replaced by the AF_XDP binding)."""
from cffi import FFI
ffibuilder = FFI()
ffibuilder.cdef("int taurus_xsk_available(void);")
ffibuilder.set_source("taurus.datapath.ports._xsk", "int taurus_xsk_available(void) { return 1; }")
if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
