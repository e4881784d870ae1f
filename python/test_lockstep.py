"""The Python binding against the CLI (CTest: python_binding).

    LOCKSTEP_LIBRARY=build/lib/liblockstep.so LOCKSTEP_CLI=build/lockstep \
      python3 python/test_lockstep.py

Logits are compared as bytes with `lockstep logits` (the same prompt, the
same model); token ids with `lockstep tokenize` and `lockstep generate
--json`. Exact: no tolerance anywhere, the binding computes nothing.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lockstep  # noqa: E402

SRC = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.dirname(HERE))
CLI = os.environ.get("LOCKSTEP_CLI", os.path.join(SRC, "build", "lockstep"))
FIXTURE = os.path.join(SRC, "tests", "data", "hf-gpt2-A")
TRAINED = os.path.join(SRC, "models", "shakespeare-gpt2")
PROMPT = "Once upon a time, in a small village"


def cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, check=False)
    if r.returncode != 0:
        raise AssertionError("lockstep %s: exit %d: %s" % (
            " ".join(args), r.returncode, r.stderr.decode(errors="replace")))
    return r.stdout


def cli_logits(model, text):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "logits.f32")
        cli("logits", "--model", model, "--text", text, "--out", out,
            "--threads", "2")
        with open(out, "rb") as f:
            return f.read()


def assert_same_bytes(test, got, want, what):
    """memcmp, naming the first differing float and both values in hex."""
    g = np.ascontiguousarray(got, dtype=np.float32).tobytes()
    if g == want:
        return
    a = np.frombuffer(g, dtype="<u4")
    b = np.frombuffer(want, dtype="<u4")
    if a.size != b.size:
        test.fail("%s: %d floats, want %d" % (what, a.size, b.size))
    i = int(np.nonzero(a != b)[0][0])
    test.fail("%s: first difference at %d: 0x%08x, want 0x%08x" %
              (what, i, a[i], b[i]))


class Binding(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tok = lockstep.Tokenizer(os.path.join(SRC, "data"))
        cls.fixture = lockstep.Model(FIXTURE)
        cls.trained = lockstep.Model(TRAINED)

    def test_version_and_info(self):
        self.assertEqual(lockstep.version(), "0.1.0")
        m = self.fixture
        self.assertEqual((m.n_vocab, m.n_ctx, m.n_embd, m.n_head, m.n_layer,
                          m.int8), (50257, 128, 64, 4, 2, False))
        info = cli("info", "--model", TRAINED).decode()
        self.assertIn(self.trained.payload_sha256, info)
        self.assertEqual(len(self.trained.payload_sha256), 64)

    def test_tokenize_matches_cli(self):
        for text in (PROMPT, "ROMEO:\nWhat, ho! <|endoftext|> caf\u00e9 \U0001F600"):
            want = json.loads(cli("tokenize", "--json", "--text", text))
            if isinstance(want, dict):
                want = want.get("ids", want.get("tokens"))
            ids = self.tok.encode(text)
            self.assertEqual(ids, want)
            self.assertEqual(self.tok.decode(ids), text.encode())

    def test_prefill_logits_equal_cli_bytes(self):
        for model, path in ((self.fixture, FIXTURE), (self.trained, TRAINED)):
            want = cli_logits(path, PROMPT)
            s = lockstep.Session(model, threads=2)
            got = s.prefill(self.tok.encode(PROMPT))
            self.assertEqual(got.dtype, np.float32)
            self.assertEqual(got.shape, (50257,))
            assert_same_bytes(self, got, want, "prefill logits " + path)
            self.assertEqual(s.position, len(self.tok.encode(PROMPT)))

    def test_steps_equal_prefill_on_every_backend(self):
        ids = self.tok.encode(PROMPT)
        want = cli_logits(TRAINED, PROMPT)
        for backend in ("reference", "cpu", "cpu-generic"):
            s = lockstep.Session(self.trained, backend=backend, threads=2)
            for t in ids:
                got = s.step(t)
            assert_same_bytes(self, got, want, "steps on " + backend)
            s.reset()
            self.assertEqual(s.position, 0)
            assert_same_bytes(self, s.prefill(ids), want,
                              "prefill after reset on " + backend)

    def test_greedy_tokens_equal_embed_example(self):
        s = lockstep.Session(self.fixture, threads=2)
        g = lockstep.Sampler(self.fixture.n_vocab)
        got = lockstep.generate(s, g, self.tok.encode(PROMPT), 8)
        # examples/CMakeLists.txt: HF's first eight greedy tokens.
        self.assertEqual(got, [9243, 37324, 37324, 24520, 13450, 13450,
                               13450, 38854])
        self.assertEqual(s.position, len(self.tok.encode(PROMPT)) + 7)

    def test_sampled_tokens_equal_cli_generate(self):
        for flags, opts in ((["--top-p", "0.9", "--seed", "1"],
                             dict(top_p=0.9, seed=1)),
                            (["--top-k", "40", "--temperature", "0.8",
                              "--seed", "1"],
                             dict(top_k=40, temperature=0.8, seed=1))):
            want = json.loads(cli("generate", "--model", TRAINED, "--text",
                                  "ROMEO:", "--generate", "24", "--json",
                                  "--quiet", *flags))
            s = lockstep.Session(self.trained, threads=2)
            g = lockstep.Sampler(self.trained.n_vocab, **opts)
            got = lockstep.generate(s, g, self.tok.encode("ROMEO:"), 24,
                                    stop_token=50256)
            self.assertEqual(got, want["tokens"], flags)
            # By hand: prefill, sample, step: the same tokens.
            s.reset()
            g = lockstep.Sampler(self.trained.n_vocab, **opts)
            logits = s.prefill(self.tok.encode("ROMEO:"))
            by_hand = []
            for _ in range(len(got)):
                by_hand.append(g.next(logits))
                logits = s.step(by_hand[-1])
            self.assertEqual(by_hand, got)

    def test_errors_raise_with_the_library_message(self):
        with self.assertRaises(lockstep.LockstepError) as e:
            lockstep.Model(os.path.join(SRC, "no-such-model"))
        self.assertEqual(e.exception.status, lockstep.ERR_LOAD)
        self.assertIn("no-such-model", str(e.exception))
        s = lockstep.Session(self.fixture, threads=1)
        with self.assertRaises(lockstep.LockstepError) as e:
            s.step(50257)
        self.assertEqual(e.exception.status, lockstep.ERR_RANGE)
        self.assertEqual(s.position, 0)
        with self.assertRaises(lockstep.LockstepError) as e:
            s.prefill([1] * 129)  # n_ctx 128
        self.assertEqual(e.exception.status, lockstep.ERR_RANGE)
        self.assertEqual(s.position, 0)
        with self.assertRaises(lockstep.LockstepError) as e:
            lockstep.Sampler(50257, top_p=1.5)
        self.assertEqual(e.exception.status, lockstep.ERR_ARGUMENT)
        with self.assertRaises(lockstep.LockstepError) as e:
            lockstep.Session(self.fixture, backend="no-such-backend")
        self.assertEqual(e.exception.status, lockstep.ERR_ARGUMENT)
        self.assertIn("no-such-backend", str(e.exception))
        with self.assertRaises(lockstep.LockstepError) as e:
            lockstep.Tokenizer("/nonexistent")
        self.assertEqual(e.exception.status, lockstep.ERR_LOAD)


if __name__ == "__main__":
    unittest.main(verbosity=2)
