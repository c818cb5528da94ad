# bench/sizing_lib/wire.py: the sizing study's "wire" section (skeleton: the measurements follow).
NAME = "wire"
TITLE = "Bytes on the wire and latency under loss"


def points(ctx):
    return 0


def run(ctx):
    pass


def report(ctx, rep):
    rep.para("Not measured yet.")


def check(run_dir):
    return []
