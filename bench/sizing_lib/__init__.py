# bench/sizing_lib: the sizing study's code. framework.py runs the sections (dataplane, wire, ike,
# model: each a module with NAME, TITLE, points, run, report, check) and writes the run directory;
# netns.py owns the gateways' namespaces; report.py turns the sections' output into report.md/html.
