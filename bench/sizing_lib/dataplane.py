# bench/sizing_lib/dataplane.py: the sizing study's "dataplane" section (skeleton: the measurements follow).
NAME = "dataplane"
TITLE = "Dataplane throughput, CPU and service demand"


def points(ctx):
    return 0


def run(ctx):
    pass


def report(ctx, rep):
    rep.para("Not measured yet.")


def check(run_dir):
    return []
