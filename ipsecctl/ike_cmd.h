/* ipsecctl/ike_cmd.h: the entry point of `ipsecctl ike ...`. ipsecctl's main dispatches here with
 * argv[0] = "ike"; the implementation (ipsecctl/ike_cmd.c) belongs to the IKE part and talks to
 * xipsec-iked. Returns an ipsecctl exit code: 0 success, 1 runtime error, 2 usage error; messages go
 * to stderr prefixed "ipsecctl: ike: ". */
#ifndef XIPSEC_IKE_CMD_H
#define XIPSEC_IKE_CMD_H

int ipsecctl_ike_main(int argc, char **argv);

#endif
