"""Machine-level primitives for the Numba datapath.

Everything here compiles with ``cache=True``: libc is reached through symbols
resolved by name at link time (``ExternalFunction``), never through addresses
baked into the code, and the rest are LLVM intrinsics.  That keeps the engine's
start-up JIT cost paid once per machine instead of once per process.

- ``rdtsc``: the time-stamp counter (about 10 ns inside a Numba loop).
- ``load_acquire_*`` / ``store_release_*``: ring producer/consumer indices
  shared with the kernel.  A plain load in a spin loop may be hoisted by LLVM;
  these may not.
- ``peek_*`` / ``poke_*`` and ``load_acquire_*_at`` / ``store_release_*_at``:
  loads and stores at raw addresses (mmap'd kernel rings, UMEM), so one
  engine can hold any number of rings in an int64 register table.  They are
  plain LLVM loads and stores, not array views: a view is an array the
  function did not receive, which Numba refuses to build without reference
  counting, and the port paths are compiled without it (see datapath/hot.py).
- ``sys_sendto`` / ``sys_poll`` / ``sys_recvfrom``: kicks and wake-ups.
- ``monotonic_ns`` / ``nap``: CLOCK_MONOTONIC (what time.monotonic_ns reads)
  and a sleep, for compiled loops that sleep between passes (the agent's).
"""
import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .hot import hot_stage

MSG_DONTWAIT = 0x40
POLLIN = 0x001
POLLOUT = 0x004

sys_sendto = types.ExternalFunction(
    "sendto", types.int64(types.int32, types.voidptr, types.uint64, types.int32,
                          types.voidptr, types.uint32))
sys_recvfrom = types.ExternalFunction(
    "recvfrom", types.int64(types.int32, types.voidptr, types.uint64, types.int32,
                            types.voidptr, types.voidptr))
# struct pollfd {int fd; short events; short revents;} passed as 8 bytes.
sys_poll = types.ExternalFunction("poll", types.int32(types.voidptr, types.uint64, types.int32))
_errno_location = types.ExternalFunction("__errno_location", types.CPointer(types.int32)())
_clock_gettime = types.ExternalFunction("clock_gettime", types.int32(types.int32, types.voidptr))
_nanosleep = types.ExternalFunction("nanosleep", types.int32(types.voidptr, types.voidptr))
CLOCK_MONOTONIC = 1


@nb.njit(cache=True)
def monotonic_ns(ts):
    """CLOCK_MONOTONIC in ns (``ts``: int64[2] scratch, a struct timespec)."""
    _clock_gettime(CLOCK_MONOTONIC, ts.ctypes.data)
    return ts[0] * 1_000_000_000 + ts[1]


@nb.njit(cache=True, nogil=True)
def nap(ts, ns):
    """Sleep ``ns`` (``ts``: int64[2] scratch); a signal may end it early."""
    ts[0], ts[1] = ns // 1_000_000_000, ns % 1_000_000_000
    _nanosleep(ts.ctypes.data, 0)


@nb.njit(cache=True)
def errno():
    return _errno_location()[0]


@intrinsic
def rdtsc(typingctx):
    """Read the CPU cycle counter (llvm.readcyclecounter)."""
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])
    return types.uint64(), codegen


@intrinsic
def prefetch(typingctx, addr):
    """Ask for the cache line at a raw address (llvm.prefetch: read, keep in
    all levels); a hint, never a fault."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        a = context.cast(builder, args[0], signature.args[0], types.int64)
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.inttoptr(a, cgutils.voidptr_t), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.none(addr), codegen


@hot_stage
def prefetch_bytes(addr, n):
    """prefetch every cache line of the n bytes at a raw address."""
    a = addr & ~np.int64(63)
    end = addr + n
    while a < end:
        prefetch(a)
        a += 64


def _atomic_load(width):
    @intrinsic
    def load_acquire(typingctx, arr, idx):
        ret = types.uint32 if width == 32 else types.uint64

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                           wraparound=False)
            return builder.load_atomic(ptr, "acquire", width // 8)
        return ret(arr, idx), codegen
    return load_acquire


def _atomic_store(width):
    @intrinsic
    def store_release(typingctx, arr, idx, val):
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                           wraparound=False)
            v = context.cast(builder, args[2], signature.args[2], aryty.dtype)
            builder.store_atomic(v, ptr, "release", width // 8)
            return context.get_dummy_value()
        return types.void(arr, idx, val), codegen
    return store_release


load_acquire_u32 = _atomic_load(32)
load_acquire_u64 = _atomic_load(64)
store_release_u32 = _atomic_store(32)
store_release_u64 = _atomic_store(64)


@intrinsic
def _int_to_voidptr(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(addr), codegen


def _addr_load(bits, ordering):
    @intrinsic
    def load(typingctx, addr):
        if not isinstance(addr, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            a = context.cast(builder, args[0], signature.args[0], types.int64)
            ptr = builder.inttoptr(a, ir.IntType(bits).as_pointer())
            if ordering is None:
                return builder.load(ptr)
            return builder.load_atomic(ptr, ordering, bits // 8)
        return (types.uint32 if bits == 32 else types.uint64)(addr), codegen
    return load


def _addr_store(bits, ordering):
    @intrinsic
    def store(typingctx, addr, val):
        if not isinstance(addr, types.Integer) or not isinstance(val, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            a = context.cast(builder, args[0], signature.args[0], types.int64)
            ty = types.uint32 if bits == 32 else types.uint64
            v = context.cast(builder, args[1], signature.args[1], ty)
            ptr = builder.inttoptr(a, ir.IntType(bits).as_pointer())
            if ordering is None:
                builder.store(v, ptr)
            else:
                builder.store_atomic(v, ptr, ordering, bits // 8)
            return context.get_dummy_value()
        return types.void(addr, val), codegen
    return store


# Plain loads/stores at an address (descriptors, frame headers) ...
peek_u32 = _addr_load(32, None)
peek_u64 = _addr_load(64, None)
poke_u32 = _addr_store(32, None)
poke_u64 = _addr_store(64, None)
# ... and the ordered ones for indices and status words shared with the kernel.
load_acquire_u32_at = _addr_load(32, "acquire")
store_release_u32_at = _addr_store(32, "release")


# Array views over raw addresses, for code compiled with reference counting
# (the raw benchmarks in bench/); the engine's port paths use peek/poke.
@nb.njit(cache=True, inline="always")
def u32_view(addr, n):
    return nb.carray(_int_to_voidptr(addr), (n,), np.uint32)


@nb.njit(cache=True, inline="always")
def u64_view(addr, n):
    return nb.carray(_int_to_voidptr(addr), (n,), np.uint64)


@nb.njit(cache=True, inline="always")
def voidptr(addr):
    return _int_to_voidptr(addr)


@nb.njit(cache=True)
def kick_tx(fd):
    """Ask the kernel to transmit what is on a TX ring (copy mode needs it).
    EAGAIN/EBUSY/ENOBUFS mean "busy, try again"; they are not errors."""
    r = sys_sendto(np.int32(fd), voidptr(0), np.uint64(0), np.int32(MSG_DONTWAIT),
                   voidptr(0), np.uint32(0))
    return r


@nb.njit(cache=True)
def wake_rx(fd):
    """Let the kernel refill an RX ring whose fill queue was starved."""
    r = sys_recvfrom(np.int32(fd), voidptr(0), np.uint64(0), np.int32(MSG_DONTWAIT),
                     voidptr(0), voidptr(0))
    return r


_memcpy = types.ExternalFunction("memcpy", types.voidptr(types.voidptr, types.voidptr, types.uint64))


@nb.njit(cache=True, inline="always")
def copy_bytes(dst_addr, src_addr, n):
    """memcpy between raw addresses.  Numba's slice assignment copies byte by
    byte (about 3 cycles/byte here); libc's memcpy is ~20x faster at 1500 B."""
    _memcpy(voidptr(dst_addr), voidptr(src_addr), np.uint64(n))


_memmove = types.ExternalFunction("memmove", types.voidptr(types.voidptr, types.voidptr,
                                                           types.uint64))


@nb.njit(cache=True, inline="always")
def move_bytes(dst_addr, src_addr, n):
    """memmove between raw addresses (the ranges may overlap)."""
    _memmove(voidptr(dst_addr), voidptr(src_addr), np.uint64(n))
