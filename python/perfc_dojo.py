"""A client for `perfc dojo`, the kernel-optimisation game (docs/dojo.md).

Pure standard library: the game runs in a `perfc dojo` child process and speaks
JSON lines on its stdin/stdout.  `PerfDojoEnv` wraps it in the Gym style:

    env = PerfDojoEnv("build/perfc", "stdlib/gemm.pdl", kernel="gemm",
                      sizes={"M": 64, "N": 64, "K": 64}, seed=1)
    state = env.reset()
    moves = env.actions()                      # [{"id", "move", "name", "args", "kwargs"}]
    state, reward, done, info = env.step(moves[0]["id"])
    m = env.measure()                          # validated time, speedup, ratio to the library
    env.undo(); print(env.schedule()); env.close()

`step` takes a move id of the current state or a move's PDL text.  An illegal move
leaves the state as it was; info["legal"] is False and info["reason"] says why.
The reward of `step` is 0 until a state is measured, unless the environment was made
with auto_measure=True (then every legal step is validated and timed and the reward
is the speedup over the unscheduled kernel).
"""

import json
import subprocess


class DojoError(Exception):
    """An error reply of the protocol: .code (bad_request, no_game, ...) and .message."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message


class DojoClient:
    """One `perfc dojo` process; request() sends one verb and returns its reply."""

    def __init__(self, perfc="perfc", args=()):
        self.proc = subprocess.Popen([perfc, "dojo", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0)
        self.next_id = 0

    def request(self, cmd, **fields):
        self.next_id += 1
        req = {"cmd": cmd, "id": self.next_id, **fields}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise DojoError("gone", "perfc dojo ended (exit status %s)" % self.proc.poll())
        reply = json.loads(line.decode("utf-8"))
        if reply.get("id") != self.next_id:
            raise DojoError("protocol", "reply to request %r, expected %r" % (reply.get("id"), self.next_id))
        if not reply["ok"]:
            raise DojoError(reply["error"]["code"], reply["error"]["message"])
        return reply

    def close(self):
        if self.proc.poll() is None:
            try:
                self.request("close")
            except (DojoError, BrokenPipeError, OSError):
                pass
            self.proc.stdin.close()
            self.proc.wait()


class PerfDojoEnv:
    """Gym-style environment over one kernel: reset/step/actions/measure/undo/close."""

    def __init__(self, perfc, file=None, source=None, kernel=None, target="host", sizes=None,
                 seed=None, auto_measure=False, threads=None, db=None, record=None):
        args = []
        if db:
            args += ["--db", db]
        if record:
            args += ["--record", record]
        self.client = DojoClient(perfc, args)
        self.reset_fields = {"target": target, "auto_measure": auto_measure}
        for key, value in (("file", file), ("source", source), ("kernel", kernel), ("sizes", sizes),
                           ("seed", seed), ("threads", threads)):
            if value is not None:
                self.reset_fields[key] = value
        self.state = None

    def reset(self):
        self.state = self.client.request("reset", **self.reset_fields)["state"]
        return self.state

    def actions(self):
        return self.client.request("actions")["actions"]

    def step(self, action):
        """action: a move id (int) or a move's PDL text.  Returns (state, reward, done, info)."""
        reply = self.client.request("step", action=action)
        self.state = reply["state"]
        info = {"legal": reply["legal"], "reason": reply["reason"], "measurement": reply["measurement"]}
        reward = reply["reward"] if reply["reward"] is not None else 0.0
        return self.state, reward, False, info

    def measure(self):
        return self.client.request("measure")["measurement"]

    def predict(self):
        """The cost model's view of the current state: features, work, and once the
        game has 20 valid measurements the predicted time (no measurement)."""
        return self.client.request("predict")

    def hints(self, hint=None, choices=None):
        """The tuner's templates as move lists from the start of the game (at their
        defaults), or hint number `hint` with some parameters at other values
        (choices: {name: index into that parameter's values})."""
        if hint is None:
            return self.client.request("hints")["hints"]
        return self.client.request("hints", hint=hint, choices=choices or {})["hints"][0]

    def undo(self):
        self.state = self.client.request("undo")["state"]
        return self.state

    def schedule(self):
        return self.client.request("schedule")["schedule"]

    def close(self):
        self.client.close()
