"""cffi builder of the AF_XDP binding (``taurus.datapath.ports._xsk``).

Running it (setup.py's ``cffi_modules`` does, on ``pip install``) also
compiles our XDP program ``bpf/xdp_redirect.bpf.c`` into ``bpf/*.bpf.o``.

Every C entry point takes and returns scalars only (ints, addresses as
uint64, char* names): sockets and BPF objects live in small C-side slot
tables and Python holds slot numbers.  Errors come back as ``-errno``.

When libxdp/libbpf or clang is missing, the builder still succeeds: it builds
a stub whose ``taurus_xsk_available()`` is 0 and ``taurus_xsk_why()`` says
why, so the rest of the package installs and falls back to AF_PACKET.
"""
import os
import shutil
import subprocess
import sys
import sysconfig

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
BPF_SRC = os.path.join(HERE, "bpf", "xdp_redirect.bpf.c")
BPF_OBJ = os.path.join(HERE, "bpf", "xdp_redirect.bpf.o")
MODULE = "taurus.datapath.ports._xsk"

CDEF_COMMON = """
int taurus_xsk_available(void);
const char *taurus_xsk_why(void);
"""

CDEF_FULL = CDEF_COMMON + """
int taurus_xsk_open(const char *ifname, uint32_t queue, uint64_t umem_addr,
                    uint64_t umem_size, uint32_t frame_size, uint32_t fill_size,
                    uint32_t comp_size, uint32_t rx_size, uint32_t tx_size,
                    uint32_t bind_flags);
int taurus_xsk_fd(int slot);
uint64_t taurus_xsk_ring(int slot, int ring, int field);
int taurus_xsk_close(int slot);
int taurus_xsk_setopt_u32(int fd, int opt, uint32_t val);
int64_t taurus_xsk_getopt_u32(int fd, int opt);
int64_t taurus_xsk_stat(int fd, int field);
int taurus_bpf_open(const char *path);
int taurus_bpf_prog_fd(int slot);
int taurus_bpf_map_fd(int slot, const char *name);
int taurus_bpf_close(int slot);
int taurus_map_set_u32(int map_fd, uint32_t key, uint32_t value);
int64_t taurus_prog_id(int prog_fd);
int taurus_xdp_attach(int ifindex, int prog_fd, uint32_t flags);
int taurus_xdp_detach(int ifindex, uint32_t flags, int expected_prog_fd);
int64_t taurus_xdp_query(int ifindex, int field);
"""

C_FULL = r"""
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#define MAX_SLOTS 256

struct tsock {
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp, rx;
};
static struct tsock *socks[MAX_SLOTS];
static struct bpf_object *objs[MAX_SLOTS];

int taurus_xsk_available(void) { return 1; }
const char *taurus_xsk_why(void) { return "libxdp binding built"; }

static int free_slot(void **table)
{
    for (int i = 0; i < MAX_SLOTS; i++)
        if (!table[i])
            return i;
    return -EMFILE;
}

int taurus_xsk_open(const char *ifname, uint32_t queue, uint64_t umem_addr,
                    uint64_t umem_size, uint32_t frame_size, uint32_t fill_size,
                    uint32_t comp_size, uint32_t rx_size, uint32_t tx_size,
                    uint32_t bind_flags)
{
    int slot = free_slot((void **)socks), err;
    struct tsock *s;
    if (slot < 0)
        return slot;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    struct xsk_umem_config uc = {
        .fill_size = fill_size, .comp_size = comp_size,
        .frame_size = frame_size, .frame_headroom = 0, .flags = 0,
    };
    err = xsk_umem__create(&s->umem, (void *)(uintptr_t)umem_addr, umem_size,
                           &s->fill, &s->comp, &uc);
    if (err) {
        free(s);
        return err < 0 ? err : -err;
    }
    struct xsk_socket_config sc = {
        .rx_size = rx_size, .tx_size = tx_size,
        /* We load and attach our own program (libxdp's dispatcher is refused here). */
        .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
        .xdp_flags = 0, .bind_flags = (uint16_t)bind_flags,
    };
    err = xsk_socket__create(&s->xsk, ifname, queue, s->umem, &s->rx, &s->tx, &sc);
    if (err) {
        xsk_umem__delete(s->umem);
        free(s);
        return err < 0 ? err : -err;
    }
    socks[slot] = s;
    return slot;
}

static struct tsock *sock_at(int slot)
{
    return (slot >= 0 && slot < MAX_SLOTS) ? socks[slot] : NULL;
}

int taurus_xsk_fd(int slot)
{
    struct tsock *s = sock_at(slot);
    return s ? xsk_socket__fd(s->xsk) : -EBADF;
}

/* ring: 0 fill, 1 completion, 2 rx, 3 tx.  field: 0 producer address,
   1 consumer address, 2 descriptor array address, 3 flags address,
   4 mask, 5 size. */
uint64_t taurus_xsk_ring(int slot, int ring, int field)
{
    struct tsock *s = sock_at(slot);
    struct xsk_ring_prod *r;
    if (!s || ring < 0 || ring > 3)
        return 0;
    /* prod and cons rings share one layout (DEFINE_XSK_RING). */
    r = ring == 0 ? &s->fill : ring == 1 ? (struct xsk_ring_prod *)&s->comp :
        ring == 2 ? (struct xsk_ring_prod *)&s->rx : &s->tx;
    switch (field) {
    case 0: return (uint64_t)(uintptr_t)r->producer;
    case 1: return (uint64_t)(uintptr_t)r->consumer;
    case 2: return (uint64_t)(uintptr_t)r->ring;
    case 3: return (uint64_t)(uintptr_t)r->flags;
    case 4: return r->mask;
    case 5: return r->size;
    }
    return 0;
}

int taurus_xsk_close(int slot)
{
    struct tsock *s = sock_at(slot);
    int err;
    if (!s)
        return -EBADF;
    xsk_socket__delete(s->xsk);
    err = xsk_umem__delete(s->umem);
    socks[slot] = NULL;
    free(s);
    return err;
}

int taurus_xsk_setopt_u32(int fd, int opt, uint32_t val)
{
    return setsockopt(fd, SOL_XDP, opt, &val, sizeof(val)) ? -errno : 0;
}

int64_t taurus_xsk_getopt_u32(int fd, int opt)
{
    uint32_t v = 0;
    socklen_t len = sizeof(v);
    return getsockopt(fd, SOL_XDP, opt, &v, &len) ? -errno : (int64_t)v;
}

/* XDP_STATISTICS fields, in struct order: rx_dropped, rx_invalid_descs,
   tx_invalid_descs, rx_ring_full, rx_fill_ring_empty_descs,
   tx_ring_empty_descs. */
int64_t taurus_xsk_stat(int fd, int field)
{
    struct xdp_statistics st;
    socklen_t len = sizeof(st);
    uint64_t v[6];
    memset(&st, 0, sizeof(st));
    if (field < 0 || field > 5)
        return -EINVAL;
    if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len))
        return -errno;
    v[0] = st.rx_dropped; v[1] = st.rx_invalid_descs; v[2] = st.tx_invalid_descs;
    v[3] = st.rx_ring_full; v[4] = st.rx_fill_ring_empty_descs;
    v[5] = st.tx_ring_empty_descs;
    return (int64_t)v[field];
}

int taurus_bpf_open(const char *path)
{
    int slot = free_slot((void **)objs), err;
    struct bpf_object *o;
    if (slot < 0)
        return slot;
    o = bpf_object__open_file(path, NULL);
    if (!o)
        return errno ? -errno : -EINVAL;
    err = bpf_object__load(o);
    if (err) {
        bpf_object__close(o);
        return err < 0 ? err : -err;
    }
    objs[slot] = o;
    return slot;
}

static struct bpf_object *obj_at(int slot)
{
    return (slot >= 0 && slot < MAX_SLOTS) ? objs[slot] : NULL;
}

int taurus_bpf_prog_fd(int slot)
{
    struct bpf_object *o = obj_at(slot);
    struct bpf_program *p = o ? bpf_object__next_program(o, NULL) : NULL;
    return p ? bpf_program__fd(p) : -ENOENT;
}

int taurus_bpf_map_fd(int slot, const char *name)
{
    struct bpf_object *o = obj_at(slot);
    struct bpf_map *m = o ? bpf_object__find_map_by_name(o, name) : NULL;
    return m ? bpf_map__fd(m) : -ENOENT;
}

int taurus_bpf_close(int slot)
{
    struct bpf_object *o = obj_at(slot);
    if (!o)
        return -EBADF;
    bpf_object__close(o);
    objs[slot] = NULL;
    return 0;
}

int taurus_map_set_u32(int map_fd, uint32_t key, uint32_t value)
{
    return bpf_map_update_elem(map_fd, &key, &value, BPF_ANY) ? -errno : 0;
}

int64_t taurus_prog_id(int prog_fd)
{
    struct bpf_prog_info info;
    uint32_t len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
        return -errno;
    return info.id;
}

int taurus_xdp_attach(int ifindex, int prog_fd, uint32_t flags)
{
    return bpf_xdp_attach(ifindex, prog_fd, flags, NULL);
}

/* Detach only if the attached program is still expected_prog_fd's. */
int taurus_xdp_detach(int ifindex, uint32_t flags, int expected_prog_fd)
{
    LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = expected_prog_fd);
    return bpf_xdp_detach(ifindex, flags | XDP_FLAGS_REPLACE, &o);
}

/* field: 0 attach mode (XDP_ATTACHED_*), 1 prog id, 2 driver-mode prog id,
   3 skb-mode prog id. */
int64_t taurus_xdp_query(int ifindex, int field)
{
    LIBBPF_OPTS(bpf_xdp_query_opts, q);
    int err = bpf_xdp_query(ifindex, 0, &q);
    if (err)
        return err;
    switch (field) {
    case 0: return q.attach_mode;
    case 1: return q.prog_id;
    case 2: return q.drv_prog_id;
    case 3: return q.skb_prog_id;
    }
    return -EINVAL;
}
"""


def _c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _stub_source(why):
    return ("int taurus_xsk_available(void) { return 0; }\n"
            "const char *taurus_xsk_why(void) { return " + _c_string(why) + "; }\n")


def _pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "libxdp", "libbpf"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"pkg-config libxdp libbpf failed: {getattr(e, 'stderr', '') or e}".strip()
    return out.split(), None


def _missing_headers(cflags):
    dirs = [f[2:] for f in cflags if f.startswith("-I")] + ["/usr/include", "/usr/local/include"]
    for h in ("xdp/xsk.h", "bpf/libbpf.h", "linux/if_xdp.h"):
        if not any(os.path.exists(os.path.join(d, h)) for d in dirs):
            return h
    return None


def compile_bpf():
    """clang -O2 -g -target bpf; returns None on success or the reason."""
    clang = shutil.which("clang")
    if clang is None:
        return "clang not found"
    inc = []
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch and os.path.isdir(f"/usr/include/{multiarch}"):
        inc = [f"-I/usr/include/{multiarch}"]  # asm/types.h lives there on Debian
    cmd = [clang, "-O2", "-g", "-target", "bpf", *inc, "-c", BPF_SRC, "-o", BPF_OBJ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return f"{' '.join(cmd)} failed:\n{r.stderr}"
    return None


def _make():
    ffi = FFI()
    cflags, why = _pkg_config("--cflags")
    libs, why2 = _pkg_config("--libs")
    why = why or why2
    if not why and _missing_headers(cflags):
        why = f"header {_missing_headers(cflags)} not found (apt install libxdp-dev libbpf-dev)"
    if not why:
        bpf_why = compile_bpf()
        if bpf_why:
            why = f"XDP program not compiled: {bpf_why}"
    if why:
        print(f"taurus: AF_XDP binding disabled: {why}", file=sys.stderr)
        ffi.cdef(CDEF_COMMON)
        ffi.set_source(MODULE, _stub_source(why))
        return ffi
    ffi.cdef(CDEF_FULL)
    ffi.set_source(
        MODULE, C_FULL,
        extra_compile_args=[f for f in cflags] + ["-O2"],
        libraries=[f[2:] for f in libs if f.startswith("-l")],
        library_dirs=[f[2:] for f in libs if f.startswith("-L")],
    )
    return ffi


ffibuilder = _make()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
