"""Numba data path of the PACKET port: TPACKET_V3 RX blocks and a TX frame ring.

RX: the kernel fills whole blocks and hands each over by setting
TP_STATUS_USER in its block_status; we copy the packets out into pool frames
and give the block back (TP_STATUS_KERNEL, release store).  A burst may stop
inside a block, so the block/packet/offset cursors live in registers.

TX: fixed-size slots, each a tpacket3_hdr (status, length) followed by the
frame at TX_DATA_OFF.  We fill AVAILABLE slots in order and flag them
SEND_REQUEST; ``pkt_service`` kicks the kernel with one sendto per burst and
the kernel sets each slot back to AVAILABLE once its skb is gone.

Registers of a PACKET port (regs[p, ...]) are named below; afpacket.py
fills them when it opens the port and zeroes RX_BASE/TX_BASE when it closes it.
The ring is reached by address (lowlevel.peek/poke, copy_bytes), so the path
compiles without reference counting (``hot``).
"""
import numpy as np

from ..lowlevel import (copy_bytes, errno, kick_tx, load_acquire_u32_at, peek_u32, poke_u32,
                        store_release_u32_at)
from ..mbuf import mbuf_alloc, mbuf_free, mbuf_received
from ..hot import hot, hot_stage
from .common import (RX_BYTES, RX_EMPTY, RX_ERR, RX_NOBUF, RX_PKTS, TX_BUSY, TX_BYTES,
                     TX_ERR, TX_KICKS, TX_PKTS)

(FD,          # socket file descriptor
 RX_BASE,     # address of the RX ring (0: port closed, every call is a no-op)
 RX_BSZ,      # RX block size, bytes
 RX_NBLK,     # RX block count
 RX_BLK,      # cursor: block we are reading
 RX_PKT,      # cursor: packets of that block already taken
 RX_OFF,      # cursor: offset of the next packet header in that block
 TX_BASE,     # address of the TX ring (right after the RX ring in the mapping)
 TX_FSZ,      # TX slot size
 TX_NR,       # TX slot count
 TX_FPB,      # TX slots per block (slots never straddle a block)
 TX_BSZ,      # TX block size
 TX_HEAD,     # cursor: next TX slot to fill
 TX_UNSENT,   # bytes flagged SEND_REQUEST that no kick has yet reported sent
 TX_MAXLEN,   # longest untagged frame the kernel accepts (MTU + 14, <= slot room)
 TX_MAXVLAN,  # longest 802.1Q-tagged frame (4 more, <= slot room)
 ) = range(16)
N_PKT_REGS = 16

# <linux/if_packet.h>
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
TP_STATUS_COPY = 2
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
TP_STATUS_AVAILABLE = 0
TP_STATUS_SEND_REQUEST = 1
TP_STATUS_SENDING = 2
TP_STATUS_WRONG_FORMAT = 4

# tpacket_block_desc (u32 words): version, offset_to_priv, block_status,
# num_pkts, offset_to_first_pkt, blk_len, ...
B_STATUS, B_NUM, B_FIRST = 2, 3, 4
# tpacket3_hdr (u32 words): next_offset, sec, nsec, snaplen, len, status,
# mac|net<<16, rxhash, vlan_tci, vlan_tpid|pad<<16, padding[2]
H_NEXT, H_SNAP, H_LEN, H_STATUS, H_MAC, H_TCI, H_TPID = 0, 3, 4, 5, 6, 8, 9
HDR3 = 48         # sizeof(struct tpacket3_hdr)
TX_DATA_OFF = 48  # TPACKET_ALIGN(sizeof(tpacket3_hdr)); no PACKET_TX_HAS_OFF

EAGAIN, EBUSY, ENOBUFS, EINTR = 11, 16, 105, 4


@hot_stage
def _copy_tagged(d, dst, h, src, snap, st):
    """The frame at src with the 802.1Q tag put back where it was on the
    wire: the kernel strips it into the TPACKET header's metadata (h)."""
    tpid = np.int64(0x8100)
    if (st & TP_STATUS_VLAN_TPID_VALID) != 0:
        tpid = np.int64(peek_u32(h + 4 * H_TPID) & 0xFFFF)
    tci = np.int64(peek_u32(h + 4 * H_TCI) & 0xFFFF)
    copy_bytes(dst, src, 12)
    d[12] = np.uint8(tpid >> 8)
    d[13] = np.uint8(tpid & 0xFF)
    d[14] = np.uint8(tci >> 8)
    d[15] = np.uint8(tci & 0xFF)
    copy_bytes(dst + 16, src + 12, snap - 12)


@hot
def pkt_rx_burst(ports, pool, p, now, out, maxn):
    """Copy up to maxn received frames into pool frames -> out[:n]."""
    base = ports.regs[p, RX_BASE]
    if base == 0:
        return 0
    bsz = ports.regs[p, RX_BSZ]
    nblk = ports.regs[p, RX_NBLK]
    blk = ports.regs[p, RX_BLK]
    k = ports.regs[p, RX_PKT]
    off = ports.regs[p, RX_OFF]
    cap = pool.data.shape[1]
    pbase = pool.data.ctypes.data
    pstride = pool.data.strides[0]
    n = 0
    nbytes = 0
    nobuf = 0
    bad = 0
    while n < maxn:
        addr = base + blk * bsz
        if (load_acquire_u32_at(addr + 4 * B_STATUS) & TP_STATUS_USER) == 0:
            break
        npk = np.int64(peek_u32(addr + 4 * B_NUM))
        if k == 0:
            off = np.int64(peek_u32(addr + 4 * B_FIRST))
        while k < npk and n < maxn:
            if off < HDR3 or off + HDR3 > bsz or (off & 3) != 0:
                bad += npk - k  # corrupt chain: give the rest of the block up
                k = npk
                break
            h = addr + off
            snap = np.int64(peek_u32(h + 4 * H_SNAP))
            st = np.int64(peek_u32(h + 4 * H_STATUS))
            mac = off + np.int64(peek_u32(h + 4 * H_MAC) & 0xFFFF)
            nxt = np.int64(peek_u32(h + 4 * H_NEXT))
            k += 1
            off += nxt
            tagged = (st & TP_STATUS_VLAN_VALID) != 0
            ln = snap + 4 if tagged else snap
            if snap < np.int64(peek_u32(h + 4 * H_LEN)) or ln > cap or mac + snap > bsz \
                    or snap < 14:
                bad += 1  # truncated by the kernel, or too big for a pool buffer
                continue
            i = mbuf_alloc(pool)
            if i < 0:
                nobuf += 1
                continue
            dst = pbase + i * pstride
            if tagged:
                _copy_tagged(pool.data[i], dst, h, addr + mac, snap, st)
            else:
                copy_bytes(dst, addr + mac, snap)
            mbuf_received(pool, i, ln, now, p)
            out[n] = i
            n += 1
            nbytes += ln
        if k < npk:
            break  # out of room in `out`; resume here next call
        store_release_u32_at(addr + 4 * B_STATUS, TP_STATUS_KERNEL)
        blk += 1
        if blk == nblk:
            blk = 0
        k = 0
        off = 0
    ports.regs[p, RX_BLK] = blk
    ports.regs[p, RX_PKT] = k
    ports.regs[p, RX_OFF] = off
    ports.cnt[p, RX_PKTS] += n
    ports.cnt[p, RX_BYTES] += nbytes
    if nobuf:
        ports.cnt[p, RX_NOBUF] += nobuf
    if bad:
        ports.cnt[p, RX_ERR] += bad
    if n == 0:
        ports.cnt[p, RX_EMPTY] += 1
    return n


@hot
def pkt_rx_pending(ports, p):
    base = ports.regs[p, RX_BASE]
    if base == 0:
        return False
    addr = base + ports.regs[p, RX_BLK] * ports.regs[p, RX_BSZ]
    return (load_acquire_u32_at(addr + 4 * B_STATUS) & TP_STATUS_USER) != 0


@hot
def pkt_tx_burst(ports, pool, p, now, bufs, n):
    """Put frames bufs[:k] on the TX ring; returns k (stops when it is full).
    A frame the kernel would refuse (too short or long) is taken, freed and
    counted as tx_err, so it cannot wedge the ring."""
    base = ports.regs[p, TX_BASE]
    if base == 0:
        return 0
    fsz = ports.regs[p, TX_FSZ]
    nr = ports.regs[p, TX_NR]
    fpb = ports.regs[p, TX_FPB]
    tbsz = ports.regs[p, TX_BSZ]
    head = ports.regs[p, TX_HEAD]
    maxlen = ports.regs[p, TX_MAXLEN]
    maxvlan = ports.regs[p, TX_MAXVLAN]
    pbase = pool.data.ctypes.data
    pstride = pool.data.strides[0]
    taken = 0
    sent = 0
    nbytes = 0
    bad = 0
    while taken < n:
        i = bufs[taken]
        ln = np.int64(pool.length[i])
        d = pool.data[i]
        lim = maxlen
        if ln >= 14 and d[12] == 0x81 and d[13] == 0x00:
            lim = maxvlan
        if ln < 14 or ln > lim:
            mbuf_free(pool, i)
            bad += 1
            taken += 1
            continue
        addr = base + (head // fpb) * tbsz + (head % fpb) * fsz
        st = load_acquire_u32_at(addr + 4 * H_STATUS)
        if st == TP_STATUS_WRONG_FORMAT:
            bad += 1  # the kernel refused what we put here last time
        elif st != TP_STATUS_AVAILABLE:
            break  # ring full: the kernel still owns the next slot
        copy_bytes(addr + TX_DATA_OFF, pbase + i * pstride, ln)
        poke_u32(addr + 4 * H_NEXT, 0)  # V3 TX has fixed slots; nonzero is rejected
        poke_u32(addr + 4 * H_LEN, ln)
        store_release_u32_at(addr + 4 * H_STATUS, TP_STATUS_SEND_REQUEST)
        mbuf_free(pool, i)
        head += 1
        if head == nr:
            head = 0
        sent += 1
        nbytes += ln
        taken += 1
    ports.regs[p, TX_HEAD] = head
    ports.regs[p, TX_UNSENT] += nbytes
    ports.cnt[p, TX_PKTS] += sent
    ports.cnt[p, TX_BYTES] += nbytes
    if bad:
        ports.cnt[p, TX_ERR] += bad
    return taken


@hot
def pkt_service(ports, pool, p, now):
    """One sendto when flagged frames wait; nonzero only when it moved some.
    sendto returns the bytes it took; it may stop early (socket send buffer),
    so what it did not report stays owed and gets another kick."""
    unsent = ports.regs[p, TX_UNSENT]
    if unsent <= 0 or ports.regs[p, TX_BASE] == 0:
        return 0
    r = kick_tx(ports.regs[p, FD])
    ports.cnt[p, TX_KICKS] += 1
    if r > 0:
        unsent -= r
        ports.regs[p, TX_UNSENT] = unsent if unsent > 0 else 0
        return 1
    if r == 0:
        # Nothing flagged at the kernel's head: all sent (frames the kernel
        # skipped as malformed never add to the byte count).
        ports.regs[p, TX_UNSENT] = 0
        return 0
    e = errno()
    if e == EAGAIN or e == ENOBUFS or e == EBUSY or e == EINTR:
        ports.cnt[p, TX_BUSY] += 1
    else:
        ports.cnt[p, TX_ERR] += 1  # e.g. ENETDOWN; retry when new frames come
        ports.regs[p, TX_UNSENT] = 0
    return 0
