"""The dojo protocol, verb by verb and error by error (docs/dojo.md): every verb's
reply, malformed JSON, a non-object, unknown verbs and fields, an oversize line
(refused, stream resynchronised at the next newline), deep nesting, bad UTF-8, an
illegal move refused with its reason and the state unchanged, undo with nothing to
undo, predict (features, no model yet), hints (the tuner's templates as moves, at
other parameter values on request, each playable from the start), verbs before reset, the end of input without close, a client that goes away
while a measurement runs (perfc exits cleanly and writes nothing to the database),
and two clients on one Unix socket.

usage: test_protocol.py PERFC ROOT SCRATCH"""
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time

perfc, root, scratch = sys.argv[1:4]
os.makedirs(scratch, exist_ok=True)
db = os.path.join(scratch, "proto.db")
if os.path.exists(db):
    os.remove(db)
gemm = os.path.join(root, "stdlib/gemm.pdl")
RESET = {"cmd": "reset", "file": gemm, "kernel": "gemm", "sizes": {"M": 32, "N": 32, "K": 32}, "seed": 5}


def start(*extra):
    return subprocess.Popen([perfc, "dojo", "--db", db, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0)


def send_raw(p, data):
    p.stdin.write(data)
    p.stdin.flush()
    line = p.stdout.readline()
    assert line, "no reply to %r" % data[:80]
    return json.loads(line)


def send(p, obj):
    return send_raw(p, (json.dumps(obj) + "\n").encode())


def err(reply, code):
    assert not reply["ok"] and reply["error"]["code"] == code and reply["error"]["message"], reply
    return reply["error"]["message"]


p = start()
# before a game
err(send(p, {"cmd": "actions"}), "no_game")
# malformed requests: each answered, the stream goes on
err(send_raw(p, b"{not json\n"), "bad_json")
err(send_raw(p, b"[1, 2]\n"), "bad_request")
err(send_raw(p, b'{"cmd": 3}\n'), "bad_request")
err(send_raw(p, b'{"id": 1}\n'), "bad_request")
err(send_raw(p, b'{"cmd": "reset", "cmd": "state"}\n'), "bad_json")  # duplicate key
err(send_raw(p, b'{"cmd": "fly", "id": 9}\n'), "unknown_cmd")
assert send_raw(p, b'{"cmd": "fly", "id": 1234567891}\n')["id"] == 1234567891
assert send_raw(p, b'{"cmd": "fly", "id": 0.25}\n')["id"] == 0.25
err(send_raw(p, b'{"cmd": "undo", "force": true}\n'), "bad_request")  # unknown field
err(send_raw(p, ("[" * 100 + "]" * 100 + "\n").encode()), "bad_json")  # nesting
err(send_raw(p, b'{"cmd": "\xff"}\n'), "bad_json")  # not UTF-8
err(send_raw(p, b'{"cmd": "state"} x\n'), "bad_json")  # trailing data
err(send_raw(p, b'{"cmd": "reset", "source": "\\ud800"}\n'), "bad_json")  # lone surrogate
# an oversize line: one error, then the next line is served
big = b'{"cmd": "state", "pad": "' + b"x" * (1 << 20) + b'"}\n'
err(send_raw(p, big), "too_large")
err(send(p, {"cmd": "reset"}), "bad_request")
err(send(p, {"cmd": "reset", "file": gemm, "sizes": {"M": -1}}), "bad_request")
m = err(send(p, {"cmd": "reset", "file": os.path.join(scratch, "missing.pdl")}), "compile")
assert "cannot read" in m, m
m = err(send(p, {"cmd": "reset", "source": "kernel k(N) { in A: f32[N]\n out B: f32[N]\n B[i] = A[i] + }"}), "compile")
assert "error" in m, m

# every verb
r = send(p, dict(RESET, id="r1"))
assert r["ok"] and r["id"] == "r1"
st = r["state"]
assert st["depth"] == 0 and st["sizes"] == {"M": 32, "N": 32, "K": 32} and "for k in 0..K" in st["ir"]
assert [l["name"] for l in st["loops"]] == ["i", "j", "k"] and st["loops"][2]["innermost"]
assert {b["name"]: (b["kind"], b["dtype"], b["mem"], b["shape"]) for b in st["buffers"]} == {
    "A": ("in", "f32", "global", [32, 32]), "B": ("in", "f32", "global", [32, 32]),
    "C": ("out", "f32", "global", [32, 32])}
r = send(p, {"cmd": "state", "ir": False})
assert r["ok"] and "ir" not in r["state"] and r["state"]["fingerprint"] == st["fingerprint"]
loops = {l["name"]: l for l in r["state"]["loops"]}
assert loops["i"]["uses"] == ["C", "A"] and loops["k"]["uses"] == ["A", "B"] and loops["k"]["reduction"], loops
assert "dropped_moves" not in r["state"]  # CPU targets: every legal move is offered
acts = send(p, {"cmd": "actions"})["actions"]
assert acts and all(a["id"] == i for i, a in enumerate(acts))
split = next(a for a in acts if a["move"] == "split(i, 4)")
assert split["name"] == "split" and split["args"] == ["i", 4]
r = send(p, {"cmd": "step", "action": split["id"]})
assert r["legal"] and r["reward"] == 0 and r["measurement"] is None and r["state"]["moves"] == ["split(i, 4)"]
fp1 = r["state"]["fingerprint"]
# illegal: refused with the transformation's reason, nothing changes
r = send(p, {"cmd": "step", "action": "parallel(k)"})
assert r["ok"] and not r["legal"] and "carries a dependence" in r["reason"], r
assert r["state"]["fingerprint"] == fp1 and r["state"]["depth"] == 1
r = send(p, {"cmd": "step", "action": "bind(io, thread.x)"})
assert not r["legal"] and "GPU" in r["reason"]
# not moves at all
err(send(p, {"cmd": "step", "action": "split(i 4"}), "bad_move")
err(send(p, {"cmd": "step", "action": "split(i, 2) split(j, 2)"}), "bad_move")
err(send(p, {"cmd": "step", "action": 100000}), "bad_move")
err(send(p, {"cmd": "step", "action": 1.5}), "bad_request")
err(send(p, {"cmd": "step"}), "bad_request")
r = send(p, {"cmd": "step", "action": "vectorize(k)"})
assert not r["legal"]
r = send(p, {"cmd": "measure"})
m = r["measurement"]
assert r["ok"] and m["valid"] and m["speedup"] > 0 and m["base_ms"] > 0 and m["fingerprint"] == fp1, r
assert r["reward"] == m["speedup"]
r = send(p, {"cmd": "measure"})  # the second time from the cache, validated again
assert r["measurement"]["cached"] and r["measurement"]["valid"]
# the cost model's view: the tuner's features, no model before 20 measurements
r = send(p, {"cmd": "predict"})
assert r["ok"] and r["fingerprint"] == fp1 and r["work"] == 32 ** 3, r
assert r["features"]["depth"] == 4 and "log_acc_regs" in r["features"] and r["rows"] == 2, r
assert r["predicted_ms"] is None and r["cv_r2"] is None, r
err(send(p, {"cmd": "predict", "ir": True}), "bad_request")
# hints: the tuner's templates as moves from the start, at their defaults; asking
# leaves the game where it was
r = send(p, {"cmd": "hints"})
assert r["ok"] and len(r["hints"]) >= 2 and r["dropped"] == 0, r
hints = r["hints"]
h = hints[0]
assert h["hint"] == 0 and "contraction" in h["origin"] and h["moves"][0] == "distribute(j)", h
assert h["params"] and all(q["chosen"] == 0 and q["values"] for q in h["params"]), h
st2 = send(p, {"cmd": "state", "ir": False})["state"]
assert st2["fingerprint"] == fp1 and st2["moves"] == ["split(i, 4)"], st2
# another value of a parameter: the moves use it
q = next(q for q in h["params"] if len(q["values"]) > 1 and q["values"][0].isdigit())
r = send(p, {"cmd": "hints", "hint": 0, "choices": {q["name"]: 1}})
h1 = r["hints"][0]
assert r["ok"] and len(r["hints"]) == 1 and h1["hint"] == 0 and h1["moves"] != h["moves"], r
assert [x["chosen"] for x in h1["params"] if x["name"] == q["name"]] == [1], h1
assert any(", %s" % q["values"][1] in m and ", %s" % q["values"][0] not in m for m in h1["moves"]), (q, h1["moves"])
assert send(p, {"cmd": "state", "ir": False})["state"]["fingerprint"] == fp1
err(send(p, {"cmd": "hints", "hint": len(hints)}), "bad_request")
err(send(p, {"cmd": "hints", "hint": 0, "choices": {"no_such_param": 0}}), "bad_request")
err(send(p, {"cmd": "hints", "hint": 0, "choices": {q["name"]: len(q["values"])}}), "bad_request")
err(send(p, {"cmd": "hints", "hint": 0, "choices": [1]}), "bad_request")
err(send(p, {"cmd": "hints", "choices": {}}), "bad_request")
err(send(p, {"cmd": "hints", "ir": True}), "bad_request")
sched = send(p, {"cmd": "schedule"})
assert sched["moves"] == ["split(i, 4)"] and sched["schedule"] == "schedule gemm for cpu {\n  split(i, 4)\n}\n"
r = send(p, {"cmd": "undo"})
assert r["undone"] == "split(i, 4)" and r["state"]["fingerprint"] == st["fingerprint"]
err(send(p, {"cmd": "undo"}), "no_move")
assert send(p, {"cmd": "close"})["ok"]
p.stdin.close()
assert p.wait(timeout=30) == 0
rows = sqlite3.connect(db).execute("SELECT count(*) FROM dojo_measurement").fetchone()[0]
assert rows == 2, rows  # the unscheduled kernel and split(i, 4): nothing else was measured
tuner_rows = sqlite3.connect(db).execute("SELECT count(*) FROM measurement").fetchone()[0]
assert tuner_rows == 0  # the tuner's table is untouched

# a hint at other values plays move by move from the start and measures valid
p = start("--no-db")
send(p, RESET)
for m in h1["moves"]:
    r = send(p, {"cmd": "step", "action": m})
    assert r["legal"], (m, r)
assert send(p, {"cmd": "state", "ir": False})["state"]["moves"] == h1["moves"]
assert send(p, {"cmd": "measure"})["measurement"]["valid"]
p.stdin.close()
assert p.wait(timeout=30) == 0

# the end of input without close: a clean exit
p = start()
send(p, RESET)
p.stdin.write(b'{"cmd": "state"}')  # no newline: still answered
p.stdin.close()
assert json.loads(p.stdout.readline())["ok"]
assert p.wait(timeout=30) == 0

# a client that leaves while a measurement runs: perfc exits cleanly, nothing written
db2 = os.path.join(scratch, "gone.db")
if os.path.exists(db2):
    os.remove(db2)
p = subprocess.Popen([perfc, "dojo", "--db", db2], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, bufsize=0)
big_reset = dict(RESET, sizes={"M": 256, "N": 256, "K": 256})
send(p, big_reset)
p.stdin.write(b'{"cmd": "measure"}\n')
p.stdin.flush()
time.sleep(0.3)
p.stdout.close()  # gone before the reply
p.stdin.close()
rc = p.wait(timeout=120)
assert rc == 0, (rc, p.stderr.read())
if os.path.exists(db2):
    con = sqlite3.connect(db2)
    have = con.execute("SELECT name FROM sqlite_master WHERE name = 'dojo_measurement'").fetchone()
    n = con.execute("SELECT count(*) FROM dojo_measurement").fetchone()[0] if have else 0
    assert n == 0, "%d rows written for a client that left" % n
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

# two clients on one socket, each with its own game
sock = os.path.join(scratch, "dojo.sock")
srv = subprocess.Popen([perfc, "dojo", "--db", db, "--socket", sock], stderr=subprocess.PIPE)
for _ in range(100):
    if os.path.exists(sock):
        break
    time.sleep(0.05)


def sock_send(f, obj):
    f.write((json.dumps(obj) + "\n").encode())
    f.flush()
    return json.loads(f.readline())


clients = []
for n in (16, 24):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    f = s.makefile("rwb")
    r = sock_send(f, dict(RESET, sizes={"M": n, "N": n, "K": n}))
    assert r["ok"] and r["state"]["sizes"]["M"] == n
    clients.append((s, f, n))
for s, f, n in clients:
    assert sock_send(f, {"cmd": "state"})["state"]["sizes"]["M"] == n
    f.write(b"garbage\n")
    f.flush()
    assert json.loads(f.readline())["error"]["code"] == "bad_json"
clients[0][0].close()  # one leaves abruptly; the other goes on
s, f, n = clients[1]
assert sock_send(f, {"cmd": "step", "action": "split(j, 4)"})["legal"]
assert sock_send(f, {"cmd": "close"})["ok"]
s.close()
srv.terminate()
assert srv.wait(timeout=30) == 0 and not os.path.exists(sock)
print("ok")
