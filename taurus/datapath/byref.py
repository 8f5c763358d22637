"""Pass the engine's state to compiled functions by reference.

The engine hands one namedtuple ``E`` (about 150 arrays in nested
namedtuples) to every device function.  Numba passes tuples by value,
flattened into scalar arguments: every call that LLVM does not inline
stores and reloads over a thousand words: ~0.5 us per call, measured with
a 160-array tuple, and most of an idle engine pass (bench/loop.py).

``byref(E)`` puts E in a stack slot of the caller and returns a ``ByRef``:
a pointer that reads like the tuple.  ``R.field`` loads just that field;
a field that is itself a namedtuple comes back as another ``ByRef`` (a
pointer into the same slot), so ``R.nic.fl[f, X]`` costs two address
computations and one array load, and passing ``R`` or ``R.nic`` to a
function passes one pointer.  The slot lives as long as the caller's
frame: create it in the function that owns the loop (engine_run) and never
return it.

``pin(E)`` copies E to the heap instead, holding its arrays, and returns the
address; ``at`` (made by ``at_intrinsic``) turns the address back into a
ByRef.  A compiled entry that takes the address is called from Python
without Numba typing and unboxing ~150 arrays each time; ``unpin`` releases
the copy.
"""
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.core.extending import (infer_getattr, intrinsic, lower_getattr_generic, models,
                                  register_model)
from numba.core.typing.templates import AttributeTemplate


class ByRef(types.Type):
    """A pointer to a namedtuple value ``tup`` (a numba BaseNamedTuple type)."""

    def __init__(self, tup):
        self.tup = tup
        super().__init__(name=f"ByRef({tup})")


@register_model(ByRef)
class _ByRefModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, dmm.lookup(fe_type.tup).get_value_type().as_pointer())


def _field(typ, attr):
    t = typ.tup
    if attr not in t.fields:
        return None, None
    i = t.fields.index(attr)
    return i, t.types[i]


@infer_getattr
class _ByRefAttrs(AttributeTemplate):
    key = ByRef

    def generic_resolve(self, typ, attr):
        i, ft = _field(typ, attr)
        if ft is None:
            return None
        return ByRef(ft) if isinstance(ft, types.BaseNamedTuple) else ft


@lower_getattr_generic(ByRef)
def _byref_getattr(context, builder, typ, val, attr):
    i, ft = _field(typ, attr)
    ptr = cgutils.gep_inbounds(builder, val, 0, i)
    if isinstance(ft, types.BaseNamedTuple):
        return ptr                       # a nested tuple stays by reference
    # Numba expects a new reference from getattr: code compiled with
    # reference counting decrefs it later, so count it (no-op when hot).
    return impl_ret_borrowed(context, builder, ft, builder.load(ptr))


@intrinsic
def byref(typingctx, tup):
    """A ByRef to a copy of the namedtuple ``tup`` in the caller's frame."""
    if not isinstance(tup, types.BaseNamedTuple):
        return None

    def codegen(context, builder, sig, args):
        ptr = cgutils.alloca_once(builder, args[0].type)
        builder.store(args[0], ptr)
        return ptr
    return ByRef(tup)(tup), codegen


@intrinsic
def pin(typingctx, tup):
    """Copy the namedtuple ``tup`` to the heap, holding a reference to each
    of its arrays; returns its address (an int64) for ``at``.  A compiled
    call that takes the address rather than the tuple skips typing and
    unboxing its arrays: a few microseconds against tens per call."""
    if not isinstance(tup, types.BaseNamedTuple):
        return None

    def codegen(context, builder, sig, args):
        vt = args[0].type
        raw = context.nrt.allocate(builder, context.get_constant(types.intp,
                                                                 context.get_abi_sizeof(vt)))
        builder.store(args[0], builder.bitcast(raw, vt.as_pointer()))
        context.nrt.incref(builder, tup, args[0])
        return builder.ptrtoint(raw, context.get_value_type(types.int64))
    return types.int64(tup), codegen


@intrinsic
def unpin(typingctx, addr, tup):
    """Release what ``pin`` made at `addr` (``tup`` of the same type)."""
    if not isinstance(tup, types.BaseNamedTuple):
        return None

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(tup)
        ptr = builder.inttoptr(args[0], vt.as_pointer())
        context.nrt.decref(builder, tup, builder.load(ptr))
        context.nrt.free(builder, builder.bitcast(ptr, cgutils.voidptr_t))
        return context.get_dummy_value()
    return types.void(types.int64, tup), codegen


def at_intrinsic(holder: list):
    """An intrinsic ``at(addr)``: the ByRef to the namedtuple that ``pin``
    put at `addr`, of the type ``holder[0]``.  The address carries no type,
    so the holder names it; it must be filled before the first compile of a
    caller (a cached caller is not typed again)."""
    @intrinsic
    def at(typingctx, addr):
        if not holder or not isinstance(addr, types.Integer):
            return None
        tup_type = holder[0]

        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(tup_type).as_pointer())
        return ByRef(tup_type)(addr), codegen
    return at
