/* dataplane/xipsecd/dp_tun.c: the TUN device xipsecd owns for the gateway's own traffic: opening,
 * reading, writing, closing. Packets the local stack routes into it (transport mode from the gateway
 * itself) are read by worker 0 (dp_local.c) into fresh frames and start their way in the outbound
 * stage; decapsulated packets addressed to the gateway are written into it by the forwarding stage
 * (any worker), so the kernel receives them as if they had arrived on it. The administrator routes
 * traffic into it. Calls nothing of the packet path.
 *
 * The device carries no IPv6 address of its own: traffic is routed into it by destination, and the
 * home agent's link is the inside interface, so nothing needs a link-local address here. With one,
 * the kernel would send router solicitations (and MLD reports) from it into the device, packets no
 * policy covers, dropped as no_policy on every gateway: addr_gen_mode none (before the device comes
 * up) keeps the kernel from making one. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/if_tun.h>

#include "dataplane/xipsecd/dp_path.h"

/* ESP's worst-case growth (IPv6 outer + UDP + ESP + IV + trailer) must fit the outside MTU. */
#define DP_TUN_OVERHEAD (40 + 8 + 8 + 16 + 15 + 2 + 32)

/* No IPv6 link-local address, hence no router solicitations, for device name: IN6_ADDR_GEN_MODE_NONE.
 * A kernel without IPv6 has no such file and nothing to silence. */
static void tun_no_linklocal(const char *name)
{
	char path[64 + IFNAMSIZ];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/addr_gen_mode", name);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno != ENOENT)
			dp_log(LOG_WARNING, "%s: cannot open %s: %s", name, path, strerror(errno));
		return;
	}
	if (write(fd, "1", 1) != 1)
		dp_log(LOG_WARNING, "%s: cannot set addr_gen_mode none: %s", name, strerror(errno));
	close(fd);
}

int dp_tun_open(struct dp_ctx *ctx)
{
	struct ifreq ifr;
	const char *name = ctx->cfg.tun_name ? ctx->cfg.tun_name : "xipsec0";
	char what[IFNAMSIZ + 16];
	int fd, s, err;
	uint32_t mtu = atomic_load(&ctx->ifc[DP_OUT].mtu);

	ctx->tun_fd = -1;
	if (!*name)
		return 0;
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		dp_log(LOG_ERR, "cannot open /dev/net/tun: %s (use --tun none to run without)",
		       strerror(-err));
		return err;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	/* EBUSY: still attached to a killed predecessor's file (dp_busy_wait) */
	snprintf(what, sizeof(what), "TUN device %s", name);
	for (unsigned ms = 0;;) {
		err = ioctl(fd, TUNSETIFF, &ifr) < 0 ? -errno : 0;
		if (!dp_busy_wait(err, &ms, what))
			break;
	}
	if (err) {
		dp_log(LOG_ERR, "cannot create TUN device %s: %s", name, strerror(-err));
		close(fd);
		return err;
	}
	tun_no_linklocal(ifr.ifr_name);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		ctx->tun_mtu = mtu > DP_TUN_OVERHEAD + 576 ? mtu - DP_TUN_OVERHEAD : 576;
		ifr.ifr_mtu = (int)ctx->tun_mtu;
		if (ioctl(s, SIOCSIFMTU, &ifr) < 0)
			dp_log(LOG_WARNING, "%s: cannot set MTU: %s", name, strerror(errno));
		if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
			ifr.ifr_flags |= IFF_UP;
			if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
				dp_log(LOG_WARNING, "%s: cannot bring up: %s", name, strerror(errno));
		}
		close(s);
	}
	ctx->tun_fd = fd;
	ctx->tun_ifindex = (int)if_nametoindex(ifr.ifr_name);
	dp_log(LOG_INFO, "TUN device %s (ifindex %d, MTU %u)", ifr.ifr_name, ctx->tun_ifindex,
	       ctx->tun_mtu);
	return 0;
}

int dp_tun_write(struct dp_ctx *ctx, const uint8_t *l3, uint32_t len)
{
	/* one write is one packet; concurrent writers from several workers are fine for TUN */
	if (write(ctx->tun_fd, l3, len) != (ssize_t)len)
		return -errno;
	return 0;
}

ssize_t dp_tun_read(struct dp_ctx *ctx, uint8_t *buf, size_t cap)
{
	return read(ctx->tun_fd, buf, cap);
}

void dp_tun_close(struct dp_ctx *ctx)
{
	if (ctx->tun_fd >= 0)
		close(ctx->tun_fd);
	ctx->tun_fd = -1;
}
