"""The Python client plays 50 random moves on the stdlib GEMM (64^3 on the host),
measuring after every legal move: each measured kernel must be valid (the harness
validates it against the golden reference on fresh inputs).  Then the recorded
episode must replay to the same kernel, and a tampered record must not.

usage: test_client.py PERFC ROOT SCRATCH"""
import json
import os
import random
import subprocess
import sys

perfc, root, scratch = sys.argv[1:4]
sys.path.insert(0, os.path.join(root, "python"))
from perfc_dojo import PerfDojoEnv, DojoError  # noqa: E402

os.makedirs(scratch, exist_ok=True)
db = os.path.join(scratch, "client.db")
record = os.path.join(scratch, "episode.jsonl")
for f in (db, record):
    if os.path.exists(f):
        os.remove(f)

env = PerfDojoEnv(perfc, file=os.path.join(root, "stdlib/gemm.pdl"), kernel="gemm",
                  sizes={"M": 64, "N": 64, "K": 64}, seed=7, db=db, record=record)
state = env.reset()
assert state["depth"] == 0 and state["kernel"] == "gemm"
rng = random.Random(7)
legal_moves = measured = 0
for t in range(50):
    moves = env.actions()
    assert moves, "no legal move at step %d" % t
    move = rng.choice(moves)
    state, reward, done, info = env.step(move["id"])
    assert info["legal"], "a listed move was refused: %s: %s" % (move["move"], info["reason"])
    assert state["moves"][-1] == move["move"]
    legal_moves += 1
    m = env.measure()
    measured += 1
    assert m["valid"], "invalid kernel after %s: %s" % (state["moves"], m["reason"])
    assert m["speedup"] > 0 and m["time_ms"]["median"] > 0
    # now and then take a move back: undo must restore the previous state exactly
    if rng.random() < 0.2 and state["depth"] > 0:
        before = state["fingerprint"]
        back = env.undo()
        assert back["depth"] == state["depth"] - 1
        again, _, _, info = env.step(state["moves"][-1])
        assert info["legal"] and again["fingerprint"] == before
# an illegal move by text: refused with a reason, state unchanged
fp = env.state["fingerprint"]
state, reward, done, info = env.step("parallel(nosuchloop)")
assert not info["legal"] and info["reason"] and state["fingerprint"] == fp
sched = env.schedule()
assert sched.startswith("schedule gemm for cpu {")
# 50 measurements: the game's cost model is fitted and predicts a time
pred = env.predict()
assert pred["rows"] >= 20 and pred["predicted_ms"] > 0, pred
# the tuner's templates through the client: a list, and one at another value
hs = env.hints()
assert hs and hs[0]["moves"] and env.state["fingerprint"] == state["fingerprint"], hs
q = hs[0]["params"][0]
other = env.hints(0, {q["name"]: len(q["values"]) - 1})
assert other["params"][0]["chosen"] == len(q["values"]) - 1 and other["moves"], other
env.close()
print("played %d moves, measured %d valid kernels" % (legal_moves, measured))

# the schedule reproduces the final kernel when pasted back
pasted = os.path.join(scratch, "pasted.pdl")
with open(pasted, "w") as f:
    f.write("kernel gemm(M, N, K) {\n  in A: f32[M, K]\n  in B: f32[K, N]\n  out C: f32[M, N]\n"
            "  C[i, j] = sum(k) A[i, k] * B[k, j]\n}\n" + sched)
r = subprocess.run([perfc, pasted, "-D", "M=64", "-D", "N=64", "-D", "K=64", "--run", "--seed", "3"],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr

# replay: the record reaches the same kernel; a tampered one is caught
r = subprocess.run([perfc, "dojo", "--replay", record], capture_output=True, text=True)
assert r.returncode == 0 and "as recorded" in r.stdout, r.stdout + r.stderr
lines = open(record).read().splitlines()
steps = [i for i, l in enumerate(lines) if json.loads(l)["type"] == "step"]
rec = json.loads(lines[steps[len(steps) // 2]])
rec["next_state"]["fingerprint"] = "0000000000000000"
lines[steps[len(steps) // 2]] = json.dumps(rec)
bad = os.path.join(scratch, "tampered.jsonl")
with open(bad, "w") as f:
    f.write("\n".join(lines) + "\n")
r = subprocess.run([perfc, "dojo", "--replay", bad], capture_output=True, text=True)
assert r.returncode == 2 and "differs" in r.stderr, r.stdout + r.stderr
print("ok")
