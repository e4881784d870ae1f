"""lockstep from Python: a thin ctypes binding over the C ABI (lockstep.h).

Every call goes to liblockstep.so; nothing is computed here, so the logits
and tokens are the C library's, bit for bit (docs/library.md "Python").

    import lockstep
    model = lockstep.Model("models/shakespeare-gpt2")
    tok = lockstep.Tokenizer()               # or Tokenizer(".../share/lockstep")
    session = lockstep.Session(model, threads=2)
    sampler = lockstep.Sampler(model.n_vocab, top_p=0.9, seed=1)
    ids = lockstep.generate(session, sampler, tok.encode("ROMEO:"), 48)
    print(tok.decode(ids).decode("utf-8", "replace"))

The library is found at $LOCKSTEP_LIBRARY, else by the loader's search
(ctypes.util.find_library("lockstep"), e.g. an installed prefix on
LD_LIBRARY_PATH), else in the build/lib folder beside this one.
"""

import ctypes
import ctypes.util
import os

import numpy as np

__all__ = ["LockstepError", "Model", "Session", "Sampler", "Tokenizer",
           "generate", "version", "library_path"]

# lockstep_status (lockstep.h)
OK, ERR_ARGUMENT, ERR_LOAD, ERR_RANGE, ERR_BUFFER, ERR_MEMORY, ERR_INTERNAL = \
    range(7)


class LockstepError(Exception):
    """A failed call: .status (lockstep_status) and the library's message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class _ModelInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in
                ("n_vocab", "n_ctx", "n_embd", "n_head", "n_layer", "int8")]


class _SessionOptions(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_char_p), ("threads", ctypes.c_int32),
                ("max_prefix", ctypes.c_int32)]


class _SamplerOptions(ctypes.Structure):
    _fields_ = [("top_k", ctypes.c_int32), ("temperature", ctypes.c_double),
                ("seed", ctypes.c_uint64), ("top_p", ctypes.c_double)]


_P = ctypes.c_void_p
_I32P = ctypes.POINTER(ctypes.c_int32)
_F32P = ctypes.POINTER(ctypes.c_float)
_SIZE = ctypes.c_size_t
_SIGNATURES = {
    "lockstep_version": (ctypes.c_char_p, []),
    "lockstep_status_string": (ctypes.c_char_p, [ctypes.c_int]),
    "lockstep_last_error": (ctypes.c_char_p, []),
    "lockstep_model_load": (ctypes.c_int, [ctypes.c_char_p,
                                           ctypes.POINTER(_P)]),
    "lockstep_model_free": (None, [_P]),
    "lockstep_model_get_info": (ctypes.c_int,
                                [_P, ctypes.POINTER(_ModelInfo)]),
    "lockstep_model_payload_sha256": (ctypes.c_char_p, [_P]),
    "lockstep_session_options_init": (None,
                                      [ctypes.POINTER(_SessionOptions)]),
    "lockstep_session_create": (ctypes.c_int,
                                [_P, ctypes.POINTER(_SessionOptions),
                                 ctypes.POINTER(_P)]),
    "lockstep_session_free": (None, [_P]),
    "lockstep_session_step": (ctypes.c_int, [_P, ctypes.c_int32,
                                             ctypes.POINTER(_F32P)]),
    "lockstep_session_prefill": (ctypes.c_int, [_P, _I32P, _SIZE,
                                                ctypes.POINTER(_F32P)]),
    "lockstep_session_position": (ctypes.c_int32, [_P]),
    "lockstep_session_reset": (None, [_P]),
    "lockstep_session_backend": (ctypes.c_char_p, [_P]),
    "lockstep_sampler_create": (ctypes.c_int,
                                [ctypes.POINTER(_SamplerOptions),
                                 ctypes.c_int32, ctypes.POINTER(_P)]),
    "lockstep_sampler_free": (None, [_P]),
    "lockstep_sampler_next": (ctypes.c_int, [_P, _F32P, _SIZE, _I32P]),
    "lockstep_generate": (ctypes.c_int, [_P, _P, _I32P, _SIZE, _SIZE,
                                         ctypes.c_int32, _I32P,
                                         ctypes.POINTER(_SIZE)]),
    "lockstep_tokenizer_load": (ctypes.c_int, [ctypes.c_char_p,
                                               ctypes.POINTER(_P)]),
    "lockstep_tokenizer_free": (None, [_P]),
    "lockstep_tokenize": (ctypes.c_int, [_P, ctypes.c_char_p, _SIZE, _I32P,
                                         _SIZE, ctypes.POINTER(_SIZE)]),
    "lockstep_detokenize": (ctypes.c_int, [_P, _I32P, _SIZE, ctypes.c_char_p,
                                           _SIZE, ctypes.POINTER(_SIZE)]),
}

_lib = None
_lib_path = None


def _candidates():
    env = os.environ.get("LOCKSTEP_LIBRARY")
    if env:
        return [env]
    found = ctypes.util.find_library("lockstep")
    here = os.path.dirname(os.path.abspath(__file__))
    return [p for p in (found, os.path.join(here, "..", "build", "lib",
                                            "liblockstep.so")) if p]


def _load():
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = restype, argtypes
        _lib, _lib_path = lib, path
        return lib
    raise OSError("liblockstep.so not found (set LOCKSTEP_LIBRARY): " +
                  "; ".join(errors or ["no candidate"]))


def _check(status):
    if status != OK:
        lib = _load()
        raise LockstepError(status, "%s: %s" % (
            lib.lockstep_status_string(status).decode(),
            lib.lockstep_last_error().decode("utf-8", "replace")))


def _ids(tokens):
    a = np.ascontiguousarray(tokens, dtype=np.int32)
    if a.ndim != 1:
        raise ValueError("tokens must be one-dimensional")
    return a, a.ctypes.data_as(_I32P)


def version():
    return _load().lockstep_version().decode()


def library_path():
    _load()
    return _lib_path


class Model:
    """A GPT-2 loaded from a packed .lockstep file (binary32 or int8) or a
    Hugging Face folder. Immutable; shared by any number of sessions."""

    def __init__(self, path):
        lib = _load()
        self._h = _P()
        _check(lib.lockstep_model_load(os.fsencode(path),
                                       ctypes.byref(self._h)))
        info = _ModelInfo()
        _check(lib.lockstep_model_get_info(self._h, ctypes.byref(info)))
        self.n_vocab, self.n_ctx = info.n_vocab, info.n_ctx
        self.n_embd, self.n_head, self.n_layer = (info.n_embd, info.n_head,
                                                  info.n_layer)
        self.int8 = bool(info.int8)
        self.payload_sha256 = lib.lockstep_model_payload_sha256(
            self._h).decode()

    def close(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.lockstep_model_free(self._h)
            self._h = None

    __del__ = close


class Session:
    """A KV cache and a backend over a model. One thread at a time."""

    def __init__(self, model, backend="cpu", threads=0, max_prefix=0):
        lib = _load()
        self._model = model  # keeps the weights alive
        self._n_vocab = model.n_vocab
        o = _SessionOptions(backend.encode(), threads, max_prefix)
        self._h = _P()
        _check(lib.lockstep_session_create(model._h, ctypes.byref(o),
                                           ctypes.byref(self._h)))
        self.backend = lib.lockstep_session_backend(self._h).decode()

    def _copy(self, p):
        return np.ctypeslib.as_array(p, shape=(self._n_vocab,)).copy()

    def step(self, token):
        """Consumes one token; returns the n_vocab float32 logits (a copy)."""
        p = _F32P()
        _check(_lib.lockstep_session_step(self._h, int(token),
                                          ctypes.byref(p)))
        return self._copy(p)

    def prefill(self, tokens):
        """Consumes the tokens at once; returns the last position's logits."""
        a, ptr = _ids(tokens)
        if a.size == 0:
            raise ValueError("prefill needs at least one token")
        p = _F32P()
        _check(_lib.lockstep_session_prefill(self._h, ptr, a.size,
                                             ctypes.byref(p)))
        return self._copy(p)

    @property
    def position(self):
        return _lib.lockstep_session_position(self._h)

    def reset(self):
        _lib.lockstep_session_reset(self._h)

    def close(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.lockstep_session_free(self._h)
            self._h = None

    __del__ = close


class Sampler:
    """Greedy, or seeded top-k / top-p with temperature (arithmetic.md §5)."""

    def __init__(self, n_vocab, top_k=0, temperature=1.0, seed=0, top_p=1.0):
        lib = _load()
        self.n_vocab = n_vocab
        o = _SamplerOptions(top_k, temperature, seed, top_p)
        self._h = _P()
        _check(lib.lockstep_sampler_create(ctypes.byref(o), n_vocab,
                                           ctypes.byref(self._h)))

    def next(self, logits):
        a = np.ascontiguousarray(logits, dtype=np.float32)
        t = ctypes.c_int32()
        _check(_lib.lockstep_sampler_next(self._h, a.ctypes.data_as(_F32P),
                                          a.size, ctypes.byref(t)))
        return t.value

    def close(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.lockstep_sampler_free(self._h)
            self._h = None

    __del__ = close


def generate(session, sampler, prompt, max_new, stop_token=-1):
    """Prefills the prompt, then samples up to max_new tokens (stopping after
    stop_token); the list of new token ids. lockstep_generate (lockstep.h)."""
    a, ptr = _ids(prompt)
    out = np.zeros(max(max_new, 1), dtype=np.int32)
    n = _SIZE()
    _check(_lib.lockstep_generate(session._h, sampler._h, ptr, a.size,
                                  max_new, stop_token,
                                  out.ctypes.data_as(_I32P), ctypes.byref(n)))
    return out[:n.value].tolist()


class Tokenizer:
    """GPT-2's byte-level BPE. dir: a folder holding gpt2/encoder.json and
    gpt2/vocab.bpe (an installed prefix's share/lockstep); None: the
    library's default ($LOCKSTEP_DATA, else the source tree's data/)."""

    def __init__(self, data_dir=None):
        lib = _load()
        d = None if data_dir is None else os.fsencode(
            os.path.join(data_dir, "gpt2"))
        self._h = _P()
        _check(lib.lockstep_tokenizer_load(d, ctypes.byref(self._h)))

    def encode(self, text):
        b = text.encode() if isinstance(text, str) else bytes(text)
        n = _SIZE()
        s = _lib.lockstep_tokenize(self._h, b, len(b), None, 0,
                                   ctypes.byref(n))
        if s not in (OK, ERR_BUFFER):
            _check(s)
        out = np.zeros(max(n.value, 1), dtype=np.int32)
        _check(_lib.lockstep_tokenize(self._h, b, len(b),
                                      out.ctypes.data_as(_I32P), out.size,
                                      ctypes.byref(n)))
        return out[:n.value].tolist()

    def decode(self, ids):
        """The bytes of the tokens (bytes: not always valid UTF-8)."""
        a, ptr = _ids(ids)
        n = _SIZE()
        s = _lib.lockstep_detokenize(self._h, ptr, a.size, None, 0,
                                     ctypes.byref(n))
        if s not in (OK, ERR_BUFFER):
            _check(s)
        buf = ctypes.create_string_buffer(n.value + 1)
        _check(_lib.lockstep_detokenize(self._h, ptr, a.size, buf,
                                        n.value + 1, ctypes.byref(n)))
        return buf.raw[:n.value]

    def close(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.lockstep_tokenizer_free(self._h)
            self._h = None

    __del__ = close
