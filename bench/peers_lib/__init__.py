# bench/peers_lib: bench/peers' code. tunnels.py brings each compared tunnel up between the sizing
# study's gateways (bench/sizing_lib/netns.py) and names its daemons; measure.py runs the tests on a
# tunnel, makes the table of medians and ratios, and checks a result.
