"""What chapters 01 (Linen) and 02 (NNX) share: the tied matrix of ``TiedIO`` and
``tied_io_embed``, whichever library builds it.

The sizes and the cases of its exercises, the references (the tied logits, the two
paths of its gradient), and the judges and symptoms that name what a wrong lookup or
projection did.  Each chapter's module declares its own items with these and its own
message keys (``symptom_keys``); the exercises that are the same in both are declared
here once, with what differs passed in: ``tied_io_embed`` (``embed_item``), the
module's one parameter (``structure_item``), the gradient's promises.  Neither chapter
module imports the other; both import this one as ``tied``.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from grader.comparisons import CONTAINERS, as_numbers, close, compare_arrays, one_array
from grader.drawing import float_args, hidden_rng
from grader.numerics import sample_std, self_logits_negative
from grader.outcome import Finding
from grader.registry import Case, Item, Promise

# The ranges the exercise text states: 1 to MAX_TOKENS ids, V and d up to these.
MAX_TOKENS, MAX_VOCAB, MAX_D = 64, 512, 256
# Shapes (T, V, d) of the hidden cases: a single token, a square matrix (where a
# missing transpose still runs), the most tokens over a vocabulary smaller than d (every
# id repeats), some ids repeated and some absent, and the largest sizes the text allows.
HIDDEN_SHAPES = ((1, 7, 5), (6, 16, 16), (MAX_TOKENS, 9, 12), (33, 50, 8), (MAX_TOKENS, MAX_VOCAB, MAX_D))
# Fewer for the gradients, which compile once per shape: a single token, every id
# repeated, and the largest sizes.
GRAD_SHAPES = ((1, 7, 5), (MAX_TOKENS, 9, 12), (MAX_TOKENS, MAX_VOCAB, MAX_D))
PUBLIC = dict(seed=0, token_ids=[0, 2], vocab_size=4, d_model=3)  # the notebook's worked example
FORWARD_TOL = dict(rtol=1e-4, atol=1e-5)
GRAD_TOL = dict(rtol=1e-4, atol=1e-6)


# The symptoms of a wrong tied matrix (``logits_symptom``, ``judge_gradient``): each chapter
# names them in its own catalog, ``<chapter>.<symptom>``.
SYMPTOMS = ("product_transposed", "missing_transpose", "no_lookup", "wrong_rows", "scaled", "grad_after_forward",
            "grad_blocked", "grad_lookup_blocked", "grad_head_blocked")


def symptom_keys(chapter: str) -> dict[str, str]:
    """The catalog key of each of the ``SYMPTOMS`` in ``chapter``: ``linen.wrong_rows``."""
    return {symptom: f"{chapter}.{symptom}" for symptom in SYMPTOMS}


def shape_shown(**sizes) -> dict:
    """The ``shown`` of a case: its sizes, as the student would write them."""
    return {"shape": ", ".join(f"{k}={v}" for k, v in sizes.items())}


def edge_ids(rng: np.random.Generator, length: int, vocab_size: int) -> list[int]:
    """Random ids that include the last and the first row of the matrix (from two
    tokens on): an off-by-one lookup shows at either end."""
    ids = [int(i) for i in rng.integers(0, vocab_size, size=length)]
    if length >= 2:
        ids[0], ids[-1] = vocab_size - 1, 0
    return ids


def random_matrix(rng: np.random.Generator, v: int, d: int) -> np.ndarray:
    # Entries of std d^(-1/4) make every logit O(1), so float32 rounding stays far
    # inside the tolerance whatever the order of the sums.
    return rng.normal(0.0, d ** -0.25, (v, d)).astype(np.float32)


def ids_of(case: Case) -> np.ndarray:
    args = case.args
    ids = args["args"][1] if "args" in args else args["token_ids"]
    return np.asarray(ids).astype(int)


def init_std_finding(values, n: int, expected: float, shown) -> Finding | None:
    """``common.init_std`` when the std of a drawn matrix of ``n`` entries is off.

    The sample std of n normal draws has a relative spread of about 1/sqrt(2n); allow
    ten of those, and only where n makes that a meaningful bound."""
    std = sample_std(values)
    if n >= 10_000 and not abs(std - expected) <= 10 * expected / np.sqrt(2 * n):  # NaN fails too
        return Finding("common.init_std", {"got": f"{std:.4g}", "expected": shown})
    return None


def matrix_finding(shape, values, case: Case, std: float, std_shown) -> Finding | None:
    """What is wrong with the module's one matrix, of ``shape`` and ``values``: not the
    case's (V, d), or entries whose std is not ``std`` (``init_std_finding``)."""
    expected = (case.args["vocab_size"], case.args["d_model"])
    if tuple(shape) != expected:
        return Finding("common.wrong_param_shape", {"got": tuple(shape), "expected": expected})
    return init_std_finding(values, expected[0] * expected[1], std, std_shown)


def draw_finding(chapter: str, case: Case, values, again: list, ref, transposed, std: float,
                 std_shown) -> Finding | None:
    """Is the module's one matrix the draw of the seed it was given?  ``tied_io_embed``
    runs with the book's module standing in, so this is the one item that sees a module
    that ignores its key or draws another shape.  ``values`` is the matrix built with the
    case's seed, ``again`` the one built with the next seed, ``ref`` the reference's draw,
    ``transposed()`` a (d, V) draw of the same key, transposed; ``std`` the asked scale.
    ``chapter`` prefixes the keys: ``<chapter>.init_fixed_key`` (two seeds, one matrix),
    ``<chapter>.init_transposed_draw``, ``<chapter>.init_other_draw``."""
    if values is None:
        return None  # too large to send; the smaller cases hold the draw
    seed, v, d = case.args["seed"], case.args["vocab_size"], case.args["d_model"]
    got = as_numbers(values)
    if got is None or got.shape != np.shape(ref):
        return Finding(f"{chapter}.init_other_draw", {"seed": seed})
    got = got.astype(np.float64)
    tol = dict(rtol=1e-5, atol=1e-5 * std)
    if close(got, ref, **tol):
        return None
    if again and again[0] is not None and np.shape(again[0]) == got.shape and np.array_equal(again[0], got):
        return Finding(f"{chapter}.init_fixed_key", {"seed": seed, "next": seed + 1})
    if v != d and close(got, transposed(), **tol):
        return Finding(f"{chapter}.init_transposed_draw")
    scale = float(np.sum(got * ref) / np.sum(ref * ref)) if np.all(np.isfinite(got)) else float("nan")
    if np.isfinite(scale) and scale > 0 and close(got, scale * ref, **tol):  # the right draw, scaled
        return Finding("common.init_std", {"got": f"{scale * std:.4g}", "expected": std_shown})
    return Finding(f"{chapter}.init_other_draw", {"seed": seed})


def structure_item(symbol: str, probe: str, judge, promises: tuple[Promise, ...]) -> Item:
    """The item ``<symbol>.params`` of the module that holds the one matrix: ``probe``
    reports its parameters as built on ``structure_cases``, and ``judge`` reads them."""
    return Item(name=f"{symbol}.params", symbol=symbol, points=2, probe=probe, promises=promises,
                cases=structure_cases, reference=lambda case: None, judge=judge)


# -------------------------------------------------------------- the tied matrix: its logits, its gradient, its symptoms

def tied_logits(embedding, token_ids) -> np.ndarray:
    """``E[ids] @ E.T`` in float64: the reference adds no rounding of its own."""
    emb = np.asarray(embedding, np.float64)
    return emb[np.asarray(token_ids, int)] @ emb.T


def gradient_paths(embedding, token_ids, targets, kernel=None, bias=None) -> np.ndarray:
    """The two paths of the gradient of the mean cross-entropy of ``X @ E.T`` with
    ``X = E[ids]`` (or ``E[ids] @ W + b``, the mixer, when ``kernel`` is given), in float64.

    Row 0 is what flows back through the lookup, row 1 what flows back through the
    projection; their sum is the gradient of the one matrix.  Written out rather than
    differentiated, so that it costs no compilation: with ``G = (softmax(Z) -
    onehot(targets)) / T`` the gradient of the logits ``Z = X @ H.T``, the projection
    ``H`` receives ``G.T @ X`` and each looked-up row ``E[ids[t]]`` receives
    ``(G @ H @ W.T)[t]`` (``W`` the identity without a mixer), added into row
    ``ids[t]`` once per occurrence.
    """
    emb = np.asarray(embedding, np.float64)
    ids, targets = np.asarray(token_ids, int), np.asarray(targets, int)
    x = emb[ids]
    if kernel is not None:
        w = np.asarray(kernel, np.float64)
        x = x @ w + np.asarray(bias, np.float64)
    z = x @ emb.T
    g = np.exp(z - z.max(axis=1, keepdims=True))
    g /= g.sum(axis=1, keepdims=True)
    g[np.arange(len(ids)), targets] -= 1.0
    g /= len(ids)
    back = g @ emb if kernel is None else g @ emb @ w.T
    lookup = np.zeros_like(emb)
    np.add.at(lookup, ids, back)
    return np.stack([lookup, g.T @ x])


def gradient_reference(case: Case) -> dict:
    args = case.args
    return {"logits": tied_logits(args["embedding"], args["token_ids"]),
            "paths": gradient_paths(args["embedding"], args["token_ids"], args["targets"])}


def looked_up_rows(embedding, value, tol: dict = FORWARD_TOL) -> np.ndarray | None:
    """For each row of ``value``, the token whose row of ``E @ E.T`` it is, or None
    when some row is none of them (then the projection itself is wrong)."""
    emb = np.asarray(embedding, np.float64)
    gram = emb @ emb.T
    arr = as_numbers(value)
    if arr is None or arr.ndim != 2 or arr.shape[1] != len(gram):
        return None
    arr = arr.astype(np.float64)
    # |a - g_j|^2 = |a|^2 - 2 a.g_j + |g_j|^2: the nearest row without a (T, V, V) array.
    nearest = np.argmin(-2 * arr @ gram.T + np.sum(gram ** 2, axis=1), axis=1)
    return nearest if close(arr, gram[nearest], **tol) else None


def logits_symptom(keys: dict, embedding, token_ids, value, ref, tol: dict = FORWARD_TOL) -> Finding | None:
    """What a wrong ``(T, V)`` result of the tied logits ``ref`` shows, given the matrix
    and the ids it was computed from; ``keys`` gives each symptom its chapter's message
    key.  ``value`` may be flattened: it is read in the layout its size allows."""
    emb = np.asarray(embedding, np.float64)
    ids = np.asarray(token_ids, int)
    arr = as_numbers(value)
    if arr is None:
        return None
    t, v = ref.shape
    if arr.size == ref.size and close(np.reshape(arr, (v, t)).T, ref, **tol):
        return Finding(keys["product_transposed"])
    if arr.size == ref.size and v == emb.shape[1] and close(np.reshape(arr, (t, v)), emb[ids] @ emb, **tol):
        return Finding(keys["missing_transpose"])
    if arr.size == v * v and t != v and close(np.reshape(arr, (v, v)), emb @ emb.T, **tol):
        return Finding(keys["no_lookup"])
    if arr.size != ref.size:
        return None
    table = np.reshape(arr, (t, v)).astype(np.float64)
    rows = looked_up_rows(emb, table, tol)
    if rows is not None and np.any(rows != ids):
        return Finding(keys["wrong_rows"], {"count": int(np.sum(rows != ids)), "total": t})
    factor = float(np.sum(table * ref) / max(np.sum(ref * ref), 1e-300))
    # All zeros fit a factor of 0: that is no rescaling, only a wrong result.
    if abs(factor - 1) > 1e-3 and abs(factor) > 1e-3 and close(table, factor * ref, **tol):
        return Finding(keys["scaled"], {"factor": f"{factor:.4g}"})
    return None


def judge_logits(keys: dict, matrix, flat: bool, tol: dict = FORWARD_TOL, dtype: str = ""):
    """Judge of an item whose value is the tied logits of ``matrix(case)`` and the
    case's ids (flattened when ``flat``), within ``tol``: on a mismatch, the symptom
    that names the mistake, else the generic finding."""

    def judge(case: Case, value, ref) -> Finding | None:
        finding = compare_arrays(value, ref, **tol, dtype=dtype)
        if finding is None or finding.key in ("common.not_an_array", "common.wrong_dtype"):
            return finding
        embedding, ids = matrix(case), ids_of(case)
        if flat and close(np.ravel(value), ref, **tol):
            return Finding("common.not_flattened")
        symptom = logits_symptom(keys, embedding, ids, value, np.reshape(ref, (len(ids), -1)), tol)
        if symptom is not None:
            return Finding(symptom.key, {**finding.params, **symptom.params})
        if np.size(value) == np.size(ref) and self_logits_negative(np.reshape(value, (len(ids), -1)), ids):
            return Finding("common.untied", finding.params)
        return finding

    return judge


def judge_gradient(keys: dict):
    """Judge of the gradient of the mean cross-entropy through the student's module,
    with respect to the one matrix: it must be the sum of both paths.  A path that is
    missing is named: something on that path stops the gradient."""

    def judge(case: Case, value: dict, ref: dict) -> Finding | None:
        if not isinstance(value, dict) or "grad" not in value or "logits" not in value:
            return Finding("common.not_an_array", {"type": type(value).__name__})
        if value.get("type") in CONTAINERS:  # logits as rows: what came back, not the gradient it left out
            return Finding("common.not_one_array", {"got": value["type"]})
        if compare_arrays(value["logits"], ref["logits"], **FORWARD_TOL) is not None:
            return Finding(keys["grad_after_forward"])
        lookup, head = ref["paths"]
        grad = value["grad"]
        finding = compare_arrays(grad, lookup + head, **GRAD_TOL)
        if finding is None or finding.key != "common.wrong_values":
            return finding
        if close(grad, np.zeros_like(lookup), **GRAD_TOL):
            return Finding(keys["grad_blocked"], finding.params)
        if close(grad, head, **GRAD_TOL):
            return Finding(keys["grad_lookup_blocked"], finding.params)
        if close(grad, lookup, **GRAD_TOL):
            return Finding(keys["grad_head_blocked"], finding.params)
        return finding

    return judge


def unblocked_promise(says: str, keys: dict, numpy_key: str, *more: tuple[str, str]) -> Promise:
    """The promise that nothing stops a gradient: ``judge_gradient(keys)`` names the path
    that is missing, ``numpy_key`` a NumPy round trip under the gradient (with the student's
    line); ``more`` adds (what, key) pairs of the chapter's own."""
    blocked = (keys["grad_lookup_blocked"], keys["grad_head_blocked"], keys["grad_blocked"])
    check = " / ".join(blocked) + f" name the missing path; {numpy_key} a NumPy conversion, with the student's line"
    return Promise(says, check + "".join(f"; {key} {what}" for what, key in more),
                   keys=(*blocked, numpy_key, *(key for _, key in more)))


def gradient_promises(says: str, probe: str, keys: dict, numpy_key: str, *more: tuple[str, str],
                      unblocked: str = "nothing may stop the gradient (jax.lax.stop_gradient, a NumPy round trip)"
                      ) -> tuple[Promise, Promise]:
    """The promises of an item judged by ``judge_gradient(keys)``: ``says`` that the
    gradient of the one matrix is the sum of both paths, which ``probe`` (what the probe
    differentiates) sends raw; and ``unblocked_promise(unblocked, keys, numpy_key, *more)``."""
    check = f"{probe} and sends the raw gradient; judge_gradient compares it with gradient_paths (both paths, " \
            f"float64) within rtol={GRAD_TOL['rtol']:g}, atol={GRAD_TOL['atol']:g}"
    return (Promise(says, check, keys=(keys["grad_after_forward"],)),
            unblocked_promise(unblocked, keys, numpy_key, *more))


# ---------------------------------------------------------------- the cases of the exercises both chapters have

def structure_cases() -> list[Case]:
    return [
        Case("case.worked_example", {"vocab_size": 4, "d_model": 3, "seed": 0}, True, shape_shown(V=4, d=3)),
        Case("case.hidden", {"vocab_size": 9, "d_model": 12, "seed": 3}, shown=shape_shown(V=9, d=12)),
        Case("case.hidden", {"vocab_size": MAX_VOCAB, "d_model": MAX_D, "seed": 7},
             shown=shape_shown(V=MAX_VOCAB, d=MAX_D)),
    ]

def forward_cases(item: str, drawn) -> list[Case]:
    """The worked example's matrix (``drawn(seed, V, d)``, what the module draws) and ids,
    then matrices the grader draws with the generator named ``item``."""
    rng = hidden_rng(item)
    v, d = PUBLIC["vocab_size"], PUBLIC["d_model"]
    found = [Case("case.worked_example", dict(vocab_size=v, d_model=d, token_ids=PUBLIC["token_ids"],
                                              embedding=drawn(0, v, d)),
                  True, shape_shown(T=len(PUBLIC["token_ids"]), V=v, d=d))]
    for t, v, d in HIDDEN_SHAPES:
        args = dict(vocab_size=v, d_model=d, token_ids=edge_ids(rng, t, v), embedding=random_matrix(rng, v, d))
        found.append(Case("case.hidden", args, shown=shape_shown(T=t, V=v, d=d)))
    return found


def ids_promises(probe: str) -> tuple[Promise, ...]:
    """What a tied module's ``__call__`` is promised as input, here and in chapter 02."""
    return (
        Promise("__call__(token_ids) takes int ids of shape (T,)", f"probe {probe} passes int32 ids"),
        Promise("1 to 64 ids, each in 0..V-1, repeated or not, with V up to 512 and d up to 256",
                "hidden cases T=1; V=d=16; T=64 over V=9 (every id repeats); T=33, V=50; T=64, V=512, d=256; "
                "every case with two or more ids holds id V-1 first and id 0 last"),
    )


def forward_reference(case: Case) -> np.ndarray:
    return tied_logits(case.args["embedding"], case.args["token_ids"])

def embed_promises(chapter: str, build: Promise, apply: Promise) -> tuple[Promise, ...]:
    """The promises of ``tied_io_embed``, the same exercise in both chapters but for how
    the module is built (``build``) and applied (``apply``); ``chapter`` prefixes the keys."""
    return (
        Promise("tied_io_embed(seed, token_ids, vocab_size, d_model) receives every argument as a float",
                "every case sends floats, the ids a float32 array; called positionally as the signature has no "
                "defaults"),
        Promise("cast V and d to int", f"FLOAT_SIZES: {chapter}.float_sizes", keys=(f"{chapter}.float_sizes",)),
        Promise("and the ids to jnp.int32", f"FLOAT_IDS: {chapter}.float_ids", keys=(f"{chapter}.float_ids",)),
        build,
        apply,
        Promise("return the logits flattened to shape (T·V,) with .reshape(-1)", "common.not_flattened when the "
                "(T, V) array is right; a tuple, list or dict is common.not_one_array, judged from the raw type "
                "(probe call_alone)", keys=("common.not_flattened", "common.not_one_array")),
        Promise("the worked example prints (8,) float32", "public case seed 0, ids [0, 2], V=4, d=3; dtype float32 "
                "(common.wrong_dtype)", keys=("common.wrong_dtype",)),
        Promise("1 to 64 ids, each in 0..V-1, V up to 512, d up to 256", "hidden cases as for __call__"),
    )


def embed_sizes(case: Case) -> tuple[int, int, int]:
    seed, _, v, d = case.args["args"]
    return int(seed), int(v), int(d)


def embed_reference(drawn):
    """The reference of ``tied_io_embed``: the tied logits, flattened, of the matrix that
    ``drawn(seed, V, d)`` draws (the module's own initialiser) for the case's ids."""
    return lambda case: tied_logits(drawn(*embed_sizes(case)), ids_of(case)).reshape(-1)


def judge_embed(keys: dict, drawn, tol: dict, ignores_seed: str, retried=("common.wrong_values",), also=None):
    """Judge of ``tied_io_embed`` (``embed_reference(drawn)``), in float32 within ``tol``,
    with the symptoms of a wrong lookup or projection (``judge_logits``).  On a finding
    of ``retried``: first ``also(case, value, ref, finding)``, a mistake of the chapter's
    own, then ``ignores_seed`` when the value is seed 0's logits."""

    def judge(case: Case, value, ref) -> Finding | None:
        seed, v, d = embed_sizes(case)
        finding = judge_logits(keys, lambda c: drawn(seed, v, d), flat=True, tol=tol, dtype="float32")(case, value, ref)
        if finding is None or finding.key not in retried:
            return finding
        found = also(case, value, ref, finding) if also is not None else None
        if found is not None:
            return found
        if seed != 0 and close(value, tied_logits(drawn(0, v, d), ids_of(case)).ravel(), **tol):
            return Finding(ignores_seed, finding.params)
        return finding

    return judge


def embed_item(chapter_id: str, chapter: str, points: int, stands_on: str, drawn, tol: dict, build: Promise,
               apply: Promise, **judged) -> Item:
    """``tied_io_embed(seed, token_ids, vocab_size, d_model)`` of a chapter: the module
    ``stands_on`` built by the seed (``build``, whose matrix ``drawn(seed, V, d)`` draws),
    applied to the ids (``apply``), the logits flattened; ``chapter`` prefixes its keys,
    ``judged`` goes to ``judge_embed``.  The probe ``call_alone`` runs it with the
    reference ``stands_on``, so that the module's mistakes stay the module's."""
    keys = symptom_keys(chapter)
    return Item(name="tied_io_embed", points=points, probe="call_alone", stands_on=stands_on,
                promises=embed_promises(chapter, build, apply),
                cases=partial(embed_cases, f"{chapter_id}/tied_io_embed"), reference=embed_reference(drawn),
                judge=one_array(judge_embed(keys, drawn, tol, f"{chapter}.ignores_seed", **judged)))


def embed_cases(item: str) -> list[Case]:
    """The worked example of ``tied_io_embed`` (every argument a float), then hidden
    seeds, ids and sizes; ``item`` names the hidden generator."""
    rng = hidden_rng(item)
    t, v, d = len(PUBLIC["token_ids"]), PUBLIC["vocab_size"], PUBLIC["d_model"]
    found = [Case("case.worked_example", {"args": float_args(**PUBLIC)}, True, shape_shown(seed=0, T=t, V=v, d=d))]
    for t, v, d in HIDDEN_SHAPES:
        # Seeds from 1 on: a function that ignores its seed (always 0) is wrong on each.
        args = dict(seed=int(rng.integers(1, 2**31 - 1)), token_ids=edge_ids(rng, t, v), vocab_size=v, d_model=d)
        found.append(Case("case.hidden", {"args": float_args(**args)}, shown=shape_shown(T=t, V=v, d=d)))
    return found
