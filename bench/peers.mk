# bench/peers.mk: bench/peers (python3, run as root), xipsecd side by side with wireguard-go, strongSwan
# kernel-libipsec and kernel forwarding on the sizing study's topology; its package bench/peers_lib
# imports bench/sizing_lib's netns.py, which bench/sizing.mk distributes.
EXTRA_DIST += bench/peers bench/peers_lib/__init__.py bench/peers_lib/tunnels.py bench/peers_lib/measure.py
