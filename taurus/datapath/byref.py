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
