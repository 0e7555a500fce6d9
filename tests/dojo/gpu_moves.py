"""Every move the dojo offers on a GPU target leaves a kernel the CUDA back end
compiles: random games on the stdlib GEMM for sm_90 (no GPU needed), and after
every step the moves so far, pasted as a schedule, go through `perfc -emit ptx`
(the pipeline, the CUDA emitter and NVRTC).  A move typed as text that leaves a
state the emitter refuses is refused with the emitter's reason.  Exits 77 (skip)
when NVRTC cannot be loaded.

usage: gpu_moves.py PERFC ROOT SCRATCH [GAMES] [STEPS]"""
import os
import random
import subprocess
import sys

perfc, root, scratch = sys.argv[1:4]
games = int(sys.argv[4]) if len(sys.argv) > 4 else 2
steps = int(sys.argv[5]) if len(sys.argv) > 5 else 12
sys.path.insert(0, os.path.join(root, "python"))
from perfc_dojo import PerfDojoEnv  # noqa: E402

os.makedirs(scratch, exist_ok=True)
gemm = os.path.join(root, "stdlib/gemm.pdl")
sizes = {"M": 128, "N": 128, "K": 64}
defs = [a for k, v in sizes.items() for a in ("-D", "%s=%d" % (k, v))]


def ptx(moves):
    """Compiles the kernel with the moves as a schedule to PTX: (ok, message)."""
    cmd = [perfc, gemm, "-k", "gemm", "--no-schedule", "-target", "sm_90", "-emit", "ptx",
           "-o", os.path.join(scratch, "k.ptx")] + defs
    if moves:
        cmd += ["-s", "\n".join(moves)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, r.stderr


ok, msg = ptx([])
if not ok and "NVRTC" in msg.upper():
    print("skip: NVRTC not available: " + msg.strip().splitlines()[0])
    sys.exit(77)
assert ok, "the unscheduled kernel does not compile for sm_90: " + msg

compiled = dropped = 0
check_ms = []
for g in range(games):
    env = PerfDojoEnv(perfc, file=gemm, kernel="gemm", target="sm_90", sizes=sizes, seed=11 + g)
    state = env.reset()
    assert "dropped_moves" in state and "check_ms" in state, state.keys()
    rng = random.Random(11 + g)
    for t in range(steps):
        moves = env.actions()
        assert moves, "no move offered at step %d" % t
        move = rng.choice(moves)
        state, _, _, info = env.step(move["id"])
        assert info["legal"], "an offered move was refused: %s: %s" % (move["move"], info["reason"])
        dropped += state["dropped_moves"]
        check_ms.append(state["check_ms"])
        ok, msg = ptx(state["moves"])
        assert ok, "game %d step %d: %s does not compile:\n%s" % (g, t, state["moves"], msg)
        compiled += 1
    env.close()

# a staged copy of B inside a block whose threads all read it: the GPU target
# passes (gpu-privatize) decide where it lives.  Whatever they decide, the dojo's
# answer must agree with the back end: offered and legal means it compiles to PTX;
# refused means a reason from the CUDA back end and the state unchanged.
env = PerfDojoEnv(perfc, file=gemm, kernel="gemm", target="sm_90", sizes=sizes, seed=3)
env.reset()
for m in ("bind(i, block.x)", "bind(j, thread.x)"):
    assert env.step(m)[3]["legal"], m
fp = env.state["fingerprint"]
offered = [a["move"] for a in env.actions()]
state, _, _, info = env.step("cache(B, i)")
if info["legal"]:
    assert "cache(B, i)" in offered, "a legal move was not offered"
    ok, msg = ptx(state["moves"])
    assert ok, "cache(B, i) is legal but does not compile:\n%s" % msg
else:
    assert "cache(B, i)" not in offered, "a move the back end refuses is offered"
    assert "CUDA back end" in info["reason"], info
    assert state["fingerprint"] == fp and state["dropped_moves"] >= 1, state
env.close()
print("ok: %d GPU states compiled to PTX, %d moves dropped by the emitter check, check %.1f ms per state "
      "(median)" % (compiled, dropped, sorted(check_ms)[len(check_ms) // 2]))
