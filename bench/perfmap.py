"""A perf map of the Numba code this process has loaded, so that `perf
report` names the engine's functions instead of one unnamed JIT region.

Code Numba loads from its cache gets no perf map (NUMBA_ENABLE_PROFILING
covers only code it compiles), but every compiled library still knows
its functions' names and addresses.  write_perf_map() writes them to
/tmp/perf-<pid>.map, the file perf reads for JIT code; call it after the
code to profile has run once (Numba loads a function on its first call).
Sizes are the gaps between neighbouring addresses.  The file outlives the
process (perf report reads it afterwards): remove it when done.  Names are shortened
to their qualified Python name (module path and function, no signature).
"""
import os
import re
import sys



def short_name(mangled: str) -> str:
    """taurus.datapath.devices.nic.rx.rx_data for its mangled name (Numba's
    wrappers keep their prefix: cpython., cfunc.)."""
    for pre in ("cpython.", "cfunc."):
        if mangled.startswith(pre):
            return pre + short_name(mangled[len(pre):])
    m = re.match(r"_ZN((?:\d+\w+?)+?)B\d", mangled)
    if not m:
        return mangled
    parts, s = [], m.group(1)
    while s:
        k = re.match(r"\d+", s)
        if not k:
            break
        n = int(k.group())
        parts.append(s[k.end():k.end() + n])
        s = s[k.end() + n:]
    return ".".join(parts) or mangled


def dispatchers():
    """Every Numba dispatcher that is a module global (the compiled code of
    the loaded modules)."""
    from numba.core.registry import CPUDispatcher
    seen, out = set(), []
    for m in list(sys.modules.values()):
        for v in list(getattr(m, "__dict__", {}).values()):
            if isinstance(v, CPUDispatcher) and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def write_perf_map(path: str | None = None) -> int:
    """Write the map; returns how many functions it names."""
    syms = {}
    for d in dispatchers():
        for cres in list(d.overloads.values()):
            lib = cres.library
            for mod in (getattr(lib, "_shared_module", None), getattr(lib, "_final_module", None)):
                if mod is None:
                    continue
                for fn in mod.functions:
                    if fn.is_declaration:
                        continue
                    a = lib.get_pointer_to_function(fn.name)
                    if a:
                        syms[a] = short_name(fn.name)
    addrs = sorted(syms)
    with open(path or f"/tmp/perf-{os.getpid()}.map", "w") as f:
        for a, b in zip(addrs, addrs[1:] + [addrs[-1] + 4096] if addrs else []):
            f.write(f"{a:x} {min(b - a, 1 << 20):x} {syms[a]}\n")
    return len(addrs)
