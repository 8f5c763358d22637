// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Taurus XDP steering: hand frames to the engine's AF_XDP socket.
 *
 * taurus_xsks: XSKMAP keyed by rx queue index (one socket per queue).
 * taurus_cfg:  u32 array; [0] mode (0 = redirect all, 1 = Taurus traffic
 *              only), [1]/[2] CSIG tag TPIDs, [3] UDP destination port.
 * Frames that are not steered, or whose queue has no socket, go to the
 * kernel (XDP_PASS), so ping/iperf3/kernel TCP keep working.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define CFG_MODE 0
#define CFG_TPID_A 1
#define CFG_TPID_B 2
#define CFG_UDP_PORT 3
#define N_CFG 8

#define MODE_ALL 0
#define ETH_P_PFC 0x8808 /* MAC control: PAUSE / PFC */

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} taurus_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, N_CFG);
	__type(key, __u32);
	__type(value, __u32);
} taurus_cfg SEC(".maps");

static __always_inline __u32 cfg(__u32 key)
{
	__u32 *v = bpf_map_lookup_elem(&taurus_cfg, &key);

	return v ? *v : 0;
}

static __always_inline int is_taurus(void *data, void *end)
{
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;
	__u32 proto, t;

	if ((void *)(eth + 1) > end)
		return 0;
	proto = bpf_ntohs(eth->h_proto);
	if (proto == ETH_P_PFC)
		return 1;
	t = cfg(CFG_TPID_A);
	if (t && proto == t)
		return 1;
	t = cfg(CFG_TPID_B);
	if (t && proto == t)
		return 1;
	if (proto != ETH_P_IP)
		return 0;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return 0;
	/* Later fragments carry no UDP header. */
	if (ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x1fff)))
		return 0;
	if (ip->ihl < 5)
		return 0;
	udp = (void *)ip + ip->ihl * 4;
	if ((void *)(udp + 1) > end)
		return 0;
	return bpf_ntohs(udp->dest) == cfg(CFG_UDP_PORT);
}

SEC("xdp")
int taurus_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	if (cfg(CFG_MODE) != MODE_ALL && !is_taurus(data, end))
		return XDP_PASS;
	return bpf_redirect_map(&taurus_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
